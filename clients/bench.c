/* bench.c - placeholder until the engine benchmark lands. */
int main(void) { return 0; }
