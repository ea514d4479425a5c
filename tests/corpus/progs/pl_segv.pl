# SPDX-License-Identifier: MIT
# unpack "p" of a bad pointer: perl reads a string at address 8.
use strict;
use warnings;
$| = 1;
print "unpacking\n";
my $s = unpack("p", pack("Q", 8));
print length($s), "\n";
