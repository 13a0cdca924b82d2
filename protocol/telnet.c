/* telnet.c - placeholder until it lands. */
typedef int proto_telnet_placeholder;
