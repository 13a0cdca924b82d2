/* message.c - placeholder until it lands. */
typedef int proto_message_placeholder;
