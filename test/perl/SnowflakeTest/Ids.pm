# The IDs a test issues: writers that insert them in batches from several
# sessions, and the standard checks on the table they fill (no ID twice,
# each session's IDs in order).
package SnowflakeTest::Ids;

use strict;
use warnings FATAL => 'all';

use Test::More;
use SnowflakeTest::Sql;

=pod

=head1 NAME

SnowflakeTest::Ids - IDs issued by writers, and the checks on them

=head1 FUNCTIONS

=over

=item create_id_writers($node)

Creates (in database postgres) the table C<ids(b int, g bigint, id bigint)>,
a table C<writers_stop> and the procedure
C<snowflake_test_write(b int, batch int, max_batches int)>, which inserts
batches of C<batch> IDs for backend C<b>, COMMITs after each batch, and stops
when a row is in writers_stop or after max_batches batches.

=item start_writers($node, $count, %options) => @handles / stop_writers($node, @handles) => @results

Starts C<$count> sessions (application_name writer_1 ... writer_N, b = 1..N)
running snowflake_test_write (options C<batch>, default 200;
C<max_batches>, default 100000; C<first>, the first b, default 1);
stop_writers makes them stop after their current batch and waits for them.

=cut

sub create_id_writers
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
		CREATE TABLE IF NOT EXISTS ids (b int NOT NULL, g bigint NOT NULL, id bigint NOT NULL);
		CREATE TABLE IF NOT EXISTS writers_stop ();
		CREATE OR REPLACE PROCEDURE snowflake_test_write(b int, batch int, max_batches int)
		LANGUAGE plpgsql AS $$
		DECLARE
			done bigint := coalesce((SELECT max(g) FROM ids WHERE ids.b = snowflake_test_write.b), 0);
		BEGIN
			FOR k IN 0 .. max_batches - 1 LOOP
				EXIT WHEN EXISTS (SELECT FROM writers_stop);
				INSERT INTO ids SELECT snowflake_test_write.b, done + k::bigint * batch + g, snowflake_nextval()
				FROM generate_series(1, batch) g;
				COMMIT;
			END LOOP;
		END $$;
	});
	return;
}

sub start_writers
{
	my ($node, $count, %options) = @_;
	my $batch = $options{batch} // 200;
	my $max_batches = $options{max_batches} // 100000;
	my $first = $options{first} // 1;
	$node->safe_psql('postgres', 'DELETE FROM writers_stop');
	my @handles;
	for my $b ($first .. $first + $count - 1)
	{
		push @handles,
		  SnowflakeTest::Sql::start_sql($node, "CALL snowflake_test_write($b, $batch, $max_batches);",
			name => "writer_$b");
	}
	return @handles;
}

sub stop_writers
{
	my ($node, @handles) = @_;
	$node->safe_psql('postgres', 'INSERT INTO writers_stop DEFAULT VALUES');
	return map { SnowflakeTest::Sql::finish_sql($_) } @handles;
}

=pod

=item check_ids($node, $table, $label, %options)

Runs the standard tests on a table with columns b, g, id: no ID appears twice,
and within each b the IDs strictly increase with g. With
C<rows =E<gt> $n>, also that the table holds $n rows. On failure, prints
examples (with the IDs decoded). Returns the number of rows.

=cut

sub check_ids
{
	my ($node, $table, $label, %options) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my ($rows, $distinct) = split /\|/,
	  $node->safe_psql('postgres',
		"SELECT count(*), count(DISTINCT id) FROM $table");
	is($rows, $options{rows}, "$label: $options{rows} rows")
	  if defined $options{rows};
	is($distinct, $rows, "$label: all $rows IDs distinct")
	  or diag "IDs issued more than once (id | times | decoded):\n"
	  . $node->safe_psql('postgres', qq{
		SELECT id, count(*), snowflake_decode(id) FROM $table
		GROUP BY id HAVING count(*) > 1 ORDER BY id LIMIT 10});
	my $disorder = $node->safe_psql('postgres', qq{
		SELECT count(*) FROM (
			SELECT id, lag(id) OVER (PARTITION BY b ORDER BY g) AS previous FROM $table
		) s WHERE previous >= id});
	is($disorder, 0, "$label: IDs strictly increasing within each backend")
	  or diag "IDs not above the previous one of the same backend "
	  . "(b | g | previous | id | decoded previous | decoded id):\n"
	  . $node->safe_psql('postgres', qq{
		SELECT b, g, previous, id, snowflake_decode(previous), snowflake_decode(id) FROM (
			SELECT b, g, id, lag(id) OVER (PARTITION BY b ORDER BY g) AS previous FROM $table
		) s WHERE previous >= id ORDER BY b, g LIMIT 10});
	return $rows;
}


=pod

=item id_ms($node, $sql) => $ms

The timestamp, in ms since 1970, of the ID that C<$sql> (one bigint) returns
on the node, decoded there; empty if it returns NULL.

=cut

sub id_ms
{
	my ($node, $sql) = @_;
	return $node->safe_psql('postgres',
		"SELECT floor(extract(epoch FROM (snowflake_decode(($sql))).ts) * 1000)::bigint");
}

=pod

=back

=cut

1;
