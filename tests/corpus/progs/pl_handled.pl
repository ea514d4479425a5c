# SPDX-License-Identifier: MIT
# SIGSEGV and SIGILL handled in perl: not a crash, exit 0.
use strict;
use warnings;
my @seen;
$SIG{SEGV} = sub { push @seen, 'SEGV' };
$SIG{ILL} = sub { push @seen, 'ILL' };
kill 'SEGV', $$;
kill 'ILL', $$;
print "handled @seen\n";
