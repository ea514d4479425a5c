// SPDX-License-Identifier: MIT
/*
 * A traced program that hands btrace a hostile ring of its own, then
 * crashes, so that btrace reads it (tests/security/attack-ringdir.py).
 * Under the QEMU backend the program runs in the emulator's process: the
 * ring socket takes its descriptor as the emulator's (same pid), and the
 * ring replaces the real one, as a re-executed emulator's does.
 *
 *   hostile-ring entries TMPDIR   ring entries 2^62: the slot size wraps
 *                                 to a small one, the ring index reaches
 *                                 far past the file
 *   hostile-ring loop TMPDIR      no TB table, and tb_pid names itself: a
 *                                 child's ring whose root is itself
 *
 * Exits 2 when it finds no ring directory in TMPDIR (not under btrace).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ring-file.h"

#define FILE_SIZE (64ull << 20)

static int send_ring(const char *dir, int fd)
{
	struct sockaddr_un a;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	uint32_t magic = BT_RING_SOCK_MAGIC;
	struct iovec iov = { &magic, sizeof(magic) };
	struct msghdr m;
	struct cmsghdr *cm;
	int s = socket(AF_UNIX, SOCK_DGRAM, 0);

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (strlen(dir) + sizeof("/sock") > sizeof(a.sun_path))
		return -1;
	memcpy(a.sun_path, dir, strlen(dir));
	memcpy(a.sun_path + strlen(dir), "/sock", sizeof("/sock"));
	memset(&m, 0, sizeof(m));
	memset(&c, 0, sizeof(c));
	m.msg_name = &a;
	m.msg_namelen = sizeof(a);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = c.buf;
	m.msg_controllen = sizeof(c.buf);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return s < 0 || sendmsg(s, &m, 0) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	char dir[4096] = "";
	struct bt_ring_hdr *h;
	struct bt_ring_slot *s;
	struct dirent *de;
	DIR *d;
	uint8_t *base;
	int fd, loop;

	if (argc != 3)
		return 2;
	loop = !strcmp(argv[1], "loop");
	d = opendir(argv[2]);
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, "btrace-qemu-", 12))
			snprintf(dir, sizeof(dir), "%s/%s", argv[2], de->d_name);
	if (d)
		closedir(d);
	if (!dir[0])
		return 2;
	fd = memfd_create("hostile", 0);
	if (fd < 0 || ftruncate(fd, (off_t)FILE_SIZE))
		return 3;
	base = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return 3;
	h = (struct bt_ring_hdr *)base;
	memcpy(h->magic, BT_RING_MAGIC, 8);
	h->version = BT_RING_VERSION;
	h->hdr_size = BT_RING_HDR_SIZE;
	h->pid = getpid();
	h->tb_pid = getpid();
	h->flags = BT_RING_F_READY;
	h->maps_offset = BT_RING_HDR_SIZE;
	h->maps_cap = 4096;
	h->nslots = 1;
	h->slot_offset = 2 * 4096;
	if (loop) {
		h->entries = 65536;
		h->flags |= BT_RING_F_FORKED;
	} else {
		/* 4 * (1040 + 2^62) wraps: a 4288-byte slot "holds" 2^62
		 * entries; the TB table follows it. */
		h->entries = 1ull << 62;
		h->tb_offset = 4 * 4096;
		h->tb_max = 16;
		h->tb_count = 16;
	}
	h->slot_size = bt_ring_slot_size(h->entries);
	s = bt_ring_slot_at(base, h, 0);
	s->tid = getpid();
	s->state = BT_SLOT_ACTIVE;
	s->committed = 1ull << 30;
	s->stage_base = s->committed;
	bt_ring_stage(s)[0] = BT_RING_SENT;
	if (send_ring(dir, fd))
		return 4;
	usleep(200 * 1000);
	*(volatile int *)(uintptr_t)8 = 1;   /* crash: btrace reads the ring */
	return 5;
}
