/* command.c - placeholder until it lands. */
typedef int proto_command_placeholder;
