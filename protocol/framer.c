/* framer.c - placeholder until it lands. */
typedef int proto_framer_placeholder;
