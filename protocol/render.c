/* render.c - placeholder until it lands. */
typedef int proto_render_placeholder;
