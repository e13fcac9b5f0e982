# Found by the fault campaign (test/campaign, doc/campaign.md): seed 125,
# shrunk from 10 operations to 2 with mutant no-drop-mark applied (a drop of
# the extension while the check of the databases is held up marks nothing),
# which it kills, as it kills marks-ignored-at-start; the unmutated code
# refuses until given the bound. The copy is of a stopped server without
# pg_snowflake/ and without the replication origin of the bound (origin=0:
# with it, the copy takes its bound at once and no check runs), its clock
# 30 s behind; a prepared transaction holds up its
# check while the extension is dropped, then it crashes.
# test/perl/Campaign.pm builds the campaign's cluster (a with a synchronous
# standby, b, c leasing from a registry, d checked against it), runs these
# operations with writers on every node, and test/campaign/check.py checks
# every ID a client got. What the campaign found:
#   duplicate: ID 2126324397546541079 (ms 1795790216229, 1/1, sequence 23) given 2 times: session 19 (a on r1_a_n1, app); session 132 (a on r1_a_copy5, app)
#   duplicate: ID 2126324397554929671 (ms 1795790216231, 1/1, sequence 7) given 2 times: session 20 (a on r1_a_n1, app); session 132 (a on r1_a_copy5, app)
use strict;
use warnings FATAL => 'all';

use Campaign;
use SnowflakeTest;
use Test::More;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

Campaign::test_schedule(<<'SCHEDULE', 'campaign seed 125');
kill_backend after=3 node=a
copy after=3 clock=-30 hot=0 node=a origin=0 path=drop,crash state=0

SCHEDULE

done_testing();
