/* next_b.c: the second definition of probe_target, found by next_a's dlsym(RTLD_NEXT, ...). */
char probe_target(void);
char probe_target(void) { return 'B'; }
