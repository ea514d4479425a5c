# SPDX-License-Identifier: MIT
# The CPython workload of bench/qemu-overhead.sh: json dump/load, regular
# expressions, generator expressions and a recursive fib.
# Usage: python3 pyload.py [SCALE] (default 1).
import json
import re
import sys

scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main():
    total = 0
    word = re.compile(r"(\w+)@(\w+)\.(com|org|net)")
    for rnd in range(scale):
        doc = {"k%d" % i: {"id": i, "name": "user%d" % i,
                           "tags": ["a", "b", str(i % 7)],
                           "score": i * 0.5} for i in range(2000)}
        for _ in range(5):
            text = json.dumps(doc)
            doc = json.loads(text)
        total += len(text)
        mail = " ".join("user%d@host%d.%s" % (i, i % 13,
                                              ("com", "org", "net")[i % 3])
                        for i in range(4000))
        total += sum(1 for m in word.finditer(mail) if m.group(3) != "net")
        total += sum(x * x for x in range(200000) if x % 3)
        total += fib(22)
    print(total)


main()
