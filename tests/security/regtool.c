/* SPDX-License-Identifier: MIT */
/*
 * bt-regtool: root's side of the registry attacks (tests/security).
 *   bt-regtool dir                  print this user's registry directory
 *   bt-regtool claim PID            claim PID: "claimed", "owned by N" or
 *                                   the error (exit 0, 1, 2)
 *   bt-regtool serve PID FILE SECS  own PID and answer every request for
 *                                   SECS seconds with FILE (a snapshot);
 *                                   prints "ready SOCKET" and, per peer,
 *                                   "joined" / "served" / "refused"
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"

int main(int argc, char **argv)
{
	struct btrace_error err = { 0 };
	struct bt_registry_owner *o = NULL;
	pid_t owner = 0;
	int r;

	if (argc == 2 && !strcmp(argv[1], "dir")) {
		const char *d = bt_registry_dir();

		printf("%s\n", d ? d : "(none)");
		return d ? 0 : 1;
	}
	if (argc == 3 && !strcmp(argv[1], "claim")) {
		r = bt_registry_claim(atoi(argv[2]), 0, &o, &owner, &err);
		if (r == 0)
			printf("claimed\n");
		else if (r == 1)
			printf("owned by %d\n", (int)owner);
		else
			printf("error: %s\n", err.msg);
		bt_registry_release(o);
		return r < 0 ? 2 : r;
	}
	if (argc == 5 && !strcmp(argv[1], "serve")) {
		time_t end = time(NULL) + atoi(argv[4]);

		r = bt_registry_claim(atoi(argv[2]), 0, &o, &owner, &err);
		if (r) {
			printf("error: %s\n", r == 1 ? "owned already" : err.msg);
			return 1;
		}
		printf("ready\n");
		fflush(stdout);
		while (time(NULL) < end) {
			struct pollfd p = { bt_registry_owner_fd(o), POLLIN, 0 };
			int client, kind, fd;

			if (poll(&p, 1, 200) <= 0)
				continue;
			kind = bt_registry_accept(o, &client);
			if (kind == BT_REG_JOINED) {
				printf("joined\n");
				fd = open(argv[3], O_RDONLY | O_CLOEXEC);
				bt_registry_publish(o, fd, "from bt-regtool");
				close(fd);
			} else if (kind == BT_REG_SNAPSHOT) {
				printf("served\n");
				fd = open(argv[3], O_RDONLY | O_CLOEXEC);
				bt_registry_reply(client, fd, "from bt-regtool", "no file");
				if (fd >= 0)
					close(fd);
			} else {
				printf("refused\n");
			}
			fflush(stdout);
		}
		bt_registry_release(o);
		return 0;
	}
	fprintf(stderr, "usage: bt-regtool dir | claim PID | serve PID FILE SECS\n");
	return 2;
}
