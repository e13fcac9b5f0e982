# The node's durable bound as the tests see it from outside: its second
# copy, the replication origin snowflake_bound (src/pg/bound/bound_register.cpp).
package SnowflakeTest::Bound;

use strict;
use warnings FATAL => 'all';

use Carp;

=pod

=head1 The bound's replication origin

=over

=item wait_for_bound_origin($node)

Waits until the node's replication origin C<snowflake_bound> has a state
(the register worker sets it up once the bound is known:
src/pg/bound/bound_register.cpp); dies if it never does.

=item forget_bound_origin($node)

Removes, in the stopped node's data directory, the checkpoint of its
replication origins (F<pg_logical/replorigin_checkpoint>), so that its next
start finds no state in C<snowflake_bound>, as a data directory of 1.7 or
one whose origin was never set up: for tests of what a node does without
it (the check of the databases). The node must have been stopped cleanly,
so that no WAL after its last checkpoint advances an origin again.

=back

=cut

sub wait_for_bound_origin
{
	my ($node) = @_;
	$node->poll_query_until('postgres', q{
		SELECT s.remote_lsn <> '0/0' FROM pg_catalog.pg_replication_origin_status s
		JOIN pg_catalog.pg_replication_origin o ON o.roident = s.local_id
		WHERE o.roname = 'snowflake_bound'})
	  or croak 'node ' . $node->name . ': the replication origin snowflake_bound has no state';
	return;
}

sub forget_bound_origin
{
	my ($node) = @_;
	my $checkpoint = $node->data_dir . '/pg_logical/replorigin_checkpoint';
	unlink $checkpoint or $!{ENOENT} or croak "cannot remove $checkpoint: $!";
	return;
}

1;
