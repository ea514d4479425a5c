/* Two threads share a pointer: the main thread sets it, hands over, the
 * worker clears it, the main thread uses it. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *volatile shared;
static volatile int go, done;

static void *worker(void *arg)
{
	(void)arg;
	while (!go)
		;
	shared = NULL;
	done = 1;
	pause();
	return NULL;
}

int main(void)
{
	pthread_t t;

	pthread_create(&t, NULL, worker, NULL);
	shared = "hello";
	go = 1;
	while (!done)
		;
	printf("%zu\n", strlen(shared));
	return 0;
}
