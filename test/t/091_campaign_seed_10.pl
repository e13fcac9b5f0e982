# Found by the fault campaign (test/campaign, doc/campaign.md): seed 10,
# shrunk from 10 operations to 1 with mutant no-upgrade-mark applied (the
# 1.6 rule: pg_upgrade into a cluster tried out first issues from its
# clock), which it kills; the unmutated code refuses until given the bound.
# test/perl/Campaign.pm builds the campaign's cluster (a with a synchronous
# standby, b, c leasing from a registry, d checked against it), runs these
# operations with writers on every node, and test/campaign/check.py checks
# every ID a client got. What the campaign found:
#   duplicate: ID 2126310705606037523 (ms 1795786951816, 1/1, sequence 19) given 2 times: session 30 (a on r1_a_n1, app); session 127 (a on r1_a_upgraded5, app)
#   duplicate: ID 2126310705606037524 (ms 1795786951816, 1/1, sequence 20) given 2 times: session 30 (a on r1_a_n1, app); session 127 (a on r1_a_upgraded5, app)
use strict;
use warnings FATAL => 'all';

use Campaign;
use SnowflakeTest;
use Test::More;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

Campaign::test_schedule(<<'SCHEDULE', 'campaign seed 10');
upgrade after=2 clock=-25 node=a path=drop,crash tried=1

SCHEDULE

done_testing();
