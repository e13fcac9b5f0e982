# A state file of another system (issue 37): pg_snowflake/state vouches only
# for the data directory it was written for. Version 2 of the file (1.7)
# records the system identifier of the cluster that wrote it, and a start
# takes another system's file for no state file of its own (core/bound.hpp,
# state_file.cpp):
#
# 1. Node B issued IDs a day ahead of its clock (under max_lead); while it is
#    stopped, node A's pg_snowflake/state (another initdb: another system
#    identifier) is copied over its own, as an operator "fixing" a refusal or
#    a restore mixing two clusters' files would, and its clock is back at
#    real time, behind its own earlier IDs. B refuses (55000; the DETAIL
#    names both system identifiers, the HINT the commands that fix it), also
#    after a restart, and never issues one of its own earlier IDs.
# 2. snowflake_restore_bound() of B's own saved state file (which reads
#    another directory's file on purpose) makes it issue above them, and
#    writes a state file of B's own (version 3, B's system identifier).
# 3. A file of 1.6 or earlier (version 1, no system identifier) is still
#    trusted, and written as version 3 (1.8, which records the system
#    identifier too) at the next write.
# The file a node writes has the size the README gives it ("a N-byte state
# file").
use strict;
use warnings FATAL => 'all';

use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Path qw(make_path);
use File::Spec;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

sub state_file { return $_[0]->data_dir . '/pg_snowflake/state'; }

sub system_identifier
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
}

# CRC-32C, as PostgreSQL's pg_crc32c (INIT and FIN with all ones).
sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	for my $byte (unpack 'C*', $data)
	{
		$crc ^= $byte;
		$crc = ($crc >> 1) ^ (($crc & 1) ? 0x82F63B78 : 0) for 1 .. 8;
	}
	return $crc ^ 0xFFFFFFFF;
}

# The state file as src/pg/bound/state_file.cpp writes it: magic "SNOW",
# version, the bound as an ID, the epoch, the four widths, (version 2 and
# later) the writer's system identifier, (version 3) the durable bound in
# force, a CRC of everything before it, padding.
sub read_state
{
	my ($path) = @_;
	my $bytes = slurp_file($path);
	my ($magic, $version, $bound, $epoch, @bits) = unpack('L L Q q l4', $bytes);
	my %state = (
		magic => $magic,
		version => $version,
		bound => $bound,
		epoch => $epoch,
		bits => \@bits,
		size => length $bytes);
	$state{system_identifier} = unpack('Q', substr($bytes, 40, 8)) if $version >= 2;
	return \%state;
}

sub write_state_v1
{
	my ($path, $state) = @_;
	my $body = pack('L L Q q l4',
		0x534e4f57, 1, $state->{bound}, $state->{epoch}, @{ $state->{bits} });
	open my $fh, '>', $path or die "cannot write $path: $!";
	binmode $fh;
	print $fh $body . pack('L', crc32c($body)) . "\0" x 4;
	close $fh or die "cannot write $path: $!";
	return;
}

## 1. Another system's state file ---------------------------------------------

my $node_a = SnowflakeTest::init_node('a', worker_id => 8);
SnowflakeTest::start_node($node_a);
$node_a->safe_psql('postgres',
	'CREATE EXTENSION snowflake; SELECT count(snowflake_nextval()) FROM generate_series(1, 100)');
my $a_system = system_identifier($node_a);
$node_a->stop;
my $a_state = read_state(state_file($node_a));
is($a_state->{version}, 3, 'A writes a state file of version 3');
is($a_state->{system_identifier}, $a_system, 'that records A\'s system identifier');
my ($readme_bytes) =
  slurp_file(dirname(File::Spec->rel2abs(__FILE__)) . '/../../README.md') =~ /\ba (\d+)-byte\s+state\s+file\b/;
is($a_state->{size}, $readme_bytes,
	"A's state file has the size the README states (\"a N-byte state file\")");

# B runs a day ahead: its clock, and so its IDs.
my $node_b = SnowflakeTest::init_node(
	'b',
	faketime => 1,
	conf => ["snowflake.max_lead = '1d'"]);
SnowflakeTest::set_clock_offset($node_b, 86_400);
SnowflakeTest::start_node($node_b);
$node_b->safe_psql(
	'postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item int);
	INSERT INTO orders (item) SELECT g FROM generate_series(1, 1000) g;
});
my $b_system = system_identifier($node_b);
isnt($b_system, $a_system, 'A and B are two systems');
my $highest = $node_b->safe_psql('postgres', 'SELECT snowflake_nextval()');
$node_b->stop;

# B's own state file, kept aside as an operator would keep a backup of it.
my $saved = $node_b->basedir . '/saved';
make_path("$saved/pg_snowflake");
copy(state_file($node_b), "$saved/pg_snowflake/state") or die "copy: $!";

copy(state_file($node_a), state_file($node_b)) or die "copy: $!";
SnowflakeTest::set_clock_offset($node_b, 0);
SnowflakeTest::start_node($node_b);
# The postmaster reads pg_snowflake/ before it accepts connections.
ok( $node_b->log_contains(
		qr/WARNING:  snowflake: the bound above this data directory's earlier IDs is unknown/),
	'B: the server log warns that the bound is unknown');

sub refusal_ok
{
	my ($label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = SnowflakeTest::try_sql($node_b, 'SELECT snowflake_nextval()');
	is($r->{sqlstate}, '55000', "$label: snowflake_nextval() refuses (55000)")
	  or diag $r->{stderr}, $r->{stdout};
	ok(defined $r->{sqlstate} || $r->{stdout} > $highest,
		"$label: it issues none of its own earlier IDs")
	  or diag "it issued $r->{stdout}, at or below its earlier $highest";
	like($r->{message}, qr/the bound above this node's earlier snowflake IDs is unknown/,
		"$label: the error says the bound is unknown");
	like(
		$r->{detail} // '',
		qr/pg_snowflake\/state was written by another system \(system identifier $a_system; this one is $b_system\)/,
		"$label: the DETAIL names the other system and this one");
	like($r->{hint} // '', qr/snowflake_restore_bound\('.*snowflake_set_bound\(now\(\)\)/,
		"$label: the hint gives the commands that fix it");
	return;
}
refusal_ok('B with A\'s state file');
SnowflakeTest::restart_node($node_b);
refusal_ok('B with A\'s state file, restarted');
is($node_b->safe_psql('postgres', 'SELECT count(*) FROM orders WHERE id > 0'),
	'1000', 'B: no row was added under A\'s bound');

## 2. The operator gives B's own bound ----------------------------------------

my $r = SnowflakeTest::try_sql($node_b,
	"SELECT snowflake_restore_bound('$saved') > now() + interval '23 hours'");
is($r->{stdout}, 't',
	'B: snowflake_restore_bound of its own saved state file takes its bound, a day ahead')
  or diag $r->{stderr};
my $first = $node_b->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok($first, '>', $highest, 'B: its first ID is above every ID it issued before');
is( $node_b->safe_psql(
		'postgres',
		"INSERT INTO orders (item) SELECT g FROM generate_series(1, 1000) g; SELECT count(*), count(DISTINCT id) FROM orders"
	),
	'2000|2000',
	'B: new rows collide with none of its earlier ones');
my $b_state = read_state(state_file($node_b));
is($b_state->{version}, 3, 'B: its state file is of version 3 again');
is($b_state->{system_identifier}, $b_system, 'B: and records B\'s system identifier');
ok(!-e $node_b->data_dir . '/pg_snowflake/unknown', 'B: the mark of the unknown bound is gone');
SnowflakeTest::restart_node($node_b);
cmp_ok($node_b->safe_psql('postgres', 'SELECT snowflake_nextval()'),
	'>', $highest, 'B: after a restart it still issues above them');

## 3. A state file of 1.6 or earlier ------------------------------------------

$highest = $node_b->safe_psql('postgres', 'SELECT snowflake_nextval()');
$node_b->stop;
$b_state = read_state(state_file($node_b));
write_state_v1(state_file($node_b), $b_state);
is(read_state(state_file($node_b))->{size}, 48, 'a state file of version 1 written by hand');
SnowflakeTest::start_node($node_b);
$r = SnowflakeTest::try_sql($node_b, 'SELECT snowflake_nextval()');
is($r->{sqlstate}, undef, 'B with a version 1 state file: trusted, it issues IDs')
  or diag $r->{stderr};
cmp_ok($r->{stdout}, '>', $highest, 'B with a version 1 state file: above its earlier IDs');
$node_b->safe_psql('postgres', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)');
$node_b->stop;
$b_state = read_state(state_file($node_b));
is($b_state->{version}, 3, 'the next write makes it a state file of version 3');
is($b_state->{system_identifier}, $b_system, 'recording B\'s system identifier');

done_testing();
