# Helpers for snowflake's cluster-level TAP tests (test/t/*.pl), and the
# Citus tests, the campaign and the upgrade drill.
#
# Built on PostgreSQL's own PostgreSQL::Test::Cluster; the helpers add what
# the snowflake tests share: a node set up to preload the extension, a wall
# clock that a test can step (libfaketime), a real crash (every server
# process killed), SQL sessions run in the background, the registry, and the
# standard checks on a table of issued IDs. They live in one module a
# concern, under test/perl/SnowflakeTest/, each documented there; this module
# is their one name: every function of those modules is SnowflakeTest::NAME
# too, as tests call them. The API is kept small and stable: add to it, do
# not change what exists.

=pod

=head1 NAME

SnowflakeTest - shared helpers for snowflake's cluster tests

=head1 SYNOPSIS

  use PostgreSQL::Test::Utils;
  use Test::More;
  use SnowflakeTest;

  my $node = SnowflakeTest::init_node('main', faketime => 1,
      conf => ['snowflake.max_clock_backward_wait = 2s']);
  SnowflakeTest::start_node($node);
  $node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

  SnowflakeTest::set_clock_offset($node, -0.5);   # the server's clock steps back 500 ms
  my $r = SnowflakeTest::try_sql($node, 'SELECT snowflake_nextval()');
  is($r->{sqlstate}, undef, 'no error') or diag $r->{stderr};

  done_testing();

=head1 CONVENTIONS

=over

=item *

Nodes made by C<init_node> preload snowflake, have C<snowflake.datacenter_id>
and C<snowflake.worker_id> set (defaults 3 and 7), and are remembered: if the
test fails, the tail of each node's server log is printed at exit.

=item *

Clock offsets are in seconds relative to the real clock (fractions allowed,
e.g. C<-0.5>). Only the server processes of a node started with
C<faketime =E<gt> 1> see the offset; CLOCK_MONOTONIC is never faked, so
waits measured on it (snowflake.max_clock_backward_wait) stay real.

=item *

A table of IDs checked by C<check_ids> has the columns C<b> (which backend or
session issued the row), C<g> (the row's position in that backend's issue
order) and C<id> (the ID). C<create_id_writers> makes one.

=back

=head1 MODULES

Each function is documented in its module (C<perldoc
test/perl/SnowflakeTest/Nodes.pm>), and is SnowflakeTest::NAME as well:

  SnowflakeTest::Nodes      init_node, init_standby, remember_node, start_node,
                            restart_node, crash_node, snapshot_node,
                            run_pg_upgrade, start_node_at,
                            wait_until_accepting
  SnowflakeTest::Clock      faketime_available, enable_faketime,
                            set_clock_offset, server_clock_offset_ms
  SnowflakeTest::Sql        try_sql, start_sql, finish_sql, running,
                            retry_sql, backend_pid, set_config
  SnowflakeTest::Ids        create_id_writers, start_writers, stop_writers,
                            check_ids, id_ms
  SnowflakeTest::Registry   start_registry, registry_table_sql, registry_row,
                            registry_status, wait_for_registry
  SnowflakeTest::Logs       log_tail, snowflake_log_lines, mapped_library
  SnowflakeTest::Bound      wait_for_bound_origin, forget_bound_origin
  SnowflakeTest::Processes  the processes of a node, read from /proc


=cut

package SnowflakeTest;

use strict;
use warnings FATAL => 'all';

# What this file's own subroutines, if any are added below, may use, as
# before the split.
use Carp;
use Config;
use File::Basename qw(dirname);
use File::Spec;
use IPC::Run;
use POSIX qw(WNOHANG);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PsqlError;

use B;
use SnowflakeTest::Processes;
use SnowflakeTest::Clock;
use SnowflakeTest::Logs;
use SnowflakeTest::Nodes;
use SnowflakeTest::Sql;
use SnowflakeTest::Ids;
use SnowflakeTest::Bound;
use SnowflakeTest::Registry;

# Every subroutine a module defines (not those it imports) is
# SnowflakeTest::NAME too, the underscored ones included
# (SnowflakeTest::_postmaster_pid), so every existing call keeps working.
for my $module (qw(Processes Clock Logs Nodes Sql Ids Registry Bound))
{
	my $package = "SnowflakeTest::$module";
	no strict 'refs';
	for my $name (sort keys %{"${package}::"})
	{
		my $code = *{"${package}::$name"}{CODE} or next;
		next unless B::svref_2object($code)->GV->STASH->NAME eq $package;
		next if $name =~ /^[A-Z_]+$/;    # END, and constants (POSIX's WNOHANG)
		*{"SnowflakeTest::$name"} = $code;
	}
}
our $FAKETIME_LIBRARY;
*FAKETIME_LIBRARY = \$SnowflakeTest::Clock::FAKETIME_LIBRARY;
our @nodes;    # every node made, for the log dump at exit (SnowflakeTest::Nodes)
*nodes = \@SnowflakeTest::Nodes::nodes;

1;
