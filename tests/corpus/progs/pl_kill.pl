# SPDX-License-Identifier: MIT
# perl sends itself SIGABRT (SI_USER).
use strict;
use warnings;
$| = 1;
print "aborting myself\n";
kill 'ABRT', $$;
sleep 5;
print "not reached\n";
