/*
 * The C reference of bench/socket-conns.ts: connections per second through
 * rdma-core's rsockets, one process, one connection at a time. A server
 * thread accepts, reads to the end, and closes; the client connects, ends its
 * side (rshutdown SHUT_WR), reads to the server's end, closes, and waits for
 * the server thread's close: the same cycle as the TypeScript bench's
 * (connect, end, both sides closed). Warm-up cycles first, unmeasured.
 *
 *   rsocket-conns ADDRESS PORT [COUNT] [WARMUP]
 *
 * Prints one JSON line, in socket-conns.ts's shape; a bad command line exits 2.
 * Built by bench/run.sh (cc … -lrdmacm -lpthread); no part of the library.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <rdma/rsocket.h>

static int listener;
static long total;
static sem_t server_closed;

/* A bad command line: one line on stderr, exit 2, before anything native. */
static void usage(const char *problem) {
  fprintf(stderr, "rsocket-conns: %s\n", problem);
  exit(2);
}

/* argv's decimal integer in [min, max], or usage(problem). */
static long number(const char *text, long min, long max, const char *problem) {
  char *end;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) usage(problem);
  return value;
}

static void die(const char *what) {
  fprintf(stderr, "rsocket-conns: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* Reads until the peer's end (0) or an error; the bytes are dropped. */
static void read_to_end(int fd) {
  char buffer[256];
  while (rrecv(fd, buffer, sizeof buffer, 0) > 0) {
  }
}

static void *serve(void *unused) {
  (void)unused;
  for (long i = 0; i < total; i++) {
    int fd = raccept(listener, NULL, NULL);
    if (fd < 0) die("raccept");
    read_to_end(fd);
    rshutdown(fd, SHUT_WR);
    rclose(fd);
    sem_post(&server_closed);
  }
  return NULL;
}

static void cycle(const struct sockaddr_in *address) {
  int fd = rsocket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) die("rsocket");
  if (rconnect(fd, (const struct sockaddr *)address, sizeof *address) != 0) die("rconnect");
  rshutdown(fd, SHUT_WR);
  read_to_end(fd);
  rclose(fd);
  while (sem_wait(&server_closed) != 0 && errno == EINTR) {
  }
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 5) usage("takes ADDRESS PORT [COUNT] [WARMUP]");
  struct sockaddr_in address = {.sin_family = AF_INET};
  if (inet_pton(AF_INET, argv[1], &address.sin_addr) != 1) usage("ADDRESS takes an IPv4 address");
  long port = number(argv[2], 1, 65535, "PORT takes 1-65535");
  address.sin_port = htons((unsigned short)port);
  long count = argc > 3 ? number(argv[3], 1, 1000000, "COUNT takes 1-1000000") : 100;
  long warmup = argc > 4 ? number(argv[4], 0, 1000000, "WARMUP takes 0-1000000") : 20;
  total = count + warmup;
  listener = rsocket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) die("rsocket");
  int reuse = 1;
  rsetsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
  if (rbind(listener, (struct sockaddr *)&address, sizeof address) != 0) die("rbind");
  if (rlisten(listener, 16) != 0) die("rlisten");
  sem_init(&server_closed, 0, 0);
  pthread_t server;
  int failed = pthread_create(&server, NULL, serve, NULL);
  if (failed != 0) {
    errno = failed; /* pthread_create returns its error instead of setting errno */
    die("pthread_create");
  }

  for (long i = 0; i < warmup; i++) cycle(&address);
  double started = now_ms();
  for (long i = 0; i < count; i++) cycle(&address);
  double ms = now_ms() - started;
  pthread_join(server, NULL);
  rclose(listener);
  printf("{\"transport\":\"rsocket\",\"connections\":%ld,\"warmup\":%ld,\"seconds\":%.3f,\"per_second\":%.1f,\"ms_per_connection\":%.3f}\n",
         count, warmup, ms / 1e3, count / ms * 1e3, ms / count);
  return 0;
}
