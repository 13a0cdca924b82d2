/* natsd.h - for cluster tests: a nats-server of the test's own (-js, a temporary store,
 * a free loopback port), and the HTTP probes the cluster's state is read through. */
#ifndef RACE2048_TEST_NATSD_H
#define RACE2048_TEST_NATSD_H

#include <stdbool.h>
#include <sys/types.h>

#include "harness.h"

/* The test's NATS: its pid (-1 when stopped), port, nats:// URL and store. */
extern pid_t natsd_pid;
extern int natsd_port;
extern char natsd_url[64];

/* A port nothing listens on now (the kernel's pick for a socket closed again). */
int natsd_free_port(void);
/* Picks a port and a store, then starts NATS (cmocka setup: state unused). */
int natsd_setup(void **state);
/* Starts NATS (if it is not running) for the rest of the test program, with
 * a store of its own that test teardowns leave alone (the harness's spread
 * mode); it is stopped and its store removed at exit. */
void natsd_start_lasting(void);
/* harness_teardown, then NATS stopped (cmocka teardown). */
int natsd_teardown(void **state);
/* Starts nats-server again on the same port and store (as a restarted NATS
 * keeps its data) and waits until it accepts. */
void natsd_start(void);
/* kill -9 (NATS's own crash); natsd_start brings it back. */
void natsd_stop(void);

/* The body of an HTTP GET on s's game port into page, and its status code. */
int natsd_http_get(th_server *s, const char *path, char *page, size_t cap);
/* A value of s's /metrics (the test fails if it is not there). */
long long natsd_metric(th_server *s, const char *name);
/* Waits up to ms until the metric reads want (polling /metrics: the link's
 * state has no message to wait for). */
void natsd_wait_metric(th_server *s, const char *name, long long want, int ms);
/* Waits up to ms until s has rebuilt at least `games` games of another
 * incarnation (its games_taken_over metric). */
void natsd_wait_taken_over(th_server *s, long long games, int ms);
/* A node of the test's cluster: race2048d --cluster natsd_url --node name. */
th_server *natsd_node(const char *name);

#endif
