int cepoll_placeholder(void) { return 0; }
