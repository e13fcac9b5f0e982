# Public IDs (issue 40, doc/public-ids.md) in a running server: keys set in
# the file snowflake.public_id_keys_file names, used, and rotated by editing
# the file and reloading (a new key encodes, the old ones keep decoding until
# removed); a file with a fault is refused at reload (the keys before stay)
# and stops the server at start; and after all of it, with the server logging
# at DEBUG3, no key, nor any part of one, is in the server log.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

# Random keys: a string found in the log can only have come from the file.
sub random_hex
{
	my ($bytes) = @_;
	return join('', map { sprintf('%02x', int(rand(256))) } 1 .. $bytes);
}
my %keys = (
	A => random_hex(32),
	B => random_hex(16),
	C => random_hex(24),
	bad => random_hex(15) . 'f',    # 31 hexadecimal digits: refused
);

my $node = SnowflakeTest::init_node('public_ids');
my $file = $node->basedir . '/public_id.keys';

sub write_keys
{
	my (@lines) = @_;
	open(my $fh, '>', $file) or die "could not write $file: $!";
	print $fh "# snowflake public ID keys (test/t/080)\n", map { "$_\n" } @lines;
	close($fh);
	chmod(0600, $file);
	return;
}

sub key_line { my ($version) = @_; return "$version $keys{$version}"; }

# Whether a new session decodes $text (the plpgsql function below).
sub decodes
{
	my ($text) = @_;
	return $node->safe_psql('postgres', "SELECT public_id_decodes('$text')");
}

# Reloads and waits until a new session sees the keys of the file: its
# current version encodes.
sub reload_until_current
{
	my ($version) = @_;
	$node->reload;
	ok( $node->poll_query_until(
			'postgres', 'SELECT left(snowflake_to_public(1), 1)', $version),
		"after the reload, version $version encodes");
	return;
}

write_keys(key_line('A'));
$node->append_conf('postgresql.conf',
	"snowflake.public_id_keys_file = '$file'\nlog_min_messages = debug3");
SnowflakeTest::start_node($node);
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION snowflake;
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
INSERT INTO orders (item) SELECT 'item ' || g FROM generate_series(1, 100) g;
CREATE FUNCTION public_id_decodes(t text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM snowflake_from_public(t);
    RETURN true;
EXCEPTION WHEN invalid_text_representation THEN
    RETURN false;
END
$$;
});

## Key A --------------------------------------------------------------------------

my $id = $node->safe_psql('postgres', 'SELECT min(id) FROM orders');
my $text_a = $node->safe_psql('postgres', "SELECT snowflake_to_public($id)");
like($text_a, qr/^A[0-7][0-9A-HJKMNP-TV-Z]{12}$/, "key A encodes: $text_a");
is($node->safe_psql('postgres', "SELECT snowflake_from_public('$text_a')"),
	$id, 'and decodes');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM orders o
 WHERE o.id = snowflake_from_public(snowflake_to_public(o.id, 'orders'), 'orders')}),
	'100',
	'every row is found again by its public ID');

## Rotation: B is added last and encodes; A still decodes -------------------------

write_keys(key_line('A'), key_line('B'));
reload_until_current('B');
my $text_b = $node->safe_psql('postgres', "SELECT snowflake_to_public($id)");
like($text_b, qr/^B/, "key B encodes: $text_b");
is($node->safe_psql('postgres', "SELECT snowflake_from_public('$text_a')"),
	$id, "key A's text still decodes");
is($node->safe_psql('postgres', "SELECT snowflake_from_public('$text_b')"),
	$id, "key B's text decodes");

# Staged: C listed first decodes everywhere before it encodes anywhere.
write_keys(key_line('C'), key_line('A'), key_line('B'));
$node->reload;
ok($node->poll_query_until('postgres', "SELECT public_id_decodes('C' || substr('$text_b', 2))"),
	'a key listed first decodes after the reload');
is($node->safe_psql('postgres', 'SELECT left(snowflake_to_public(1), 1)'),
	'B', 'and the last one listed still encodes');

## Files with a fault are refused at reload; the keys before stay ----------------

my $log_offset = -s $node->logfile;
write_keys(key_line('B'), "C $keys{bad}");
$node->reload;
ok( $node->wait_for_log(
		qr/LOG:  invalid value for parameter "snowflake.public_id_keys_file"/, $log_offset),
	'a key of 31 digits: the reload is refused');
like(
	slurp_file($node->logfile, $log_offset),
	qr/DETAIL:  Line 3 of the file: its key is not 32, 48 or 64 hexadecimal digits\./,
	'the log names the line and the fault');
is(decodes($text_a), 't', 'the keys loaded before stay: A still decodes');

$log_offset = -s $node->logfile;
write_keys(key_line('B'), $keys{C});    # a key without its version
$node->reload;
ok($node->wait_for_log(qr/DETAIL:  Line 3 of the file: its first word is not a version/, $log_offset),
	'a key without its version: refused, the line named');

$log_offset = -s $node->logfile;
write_keys(key_line('B'));
chmod(0644, $file);
$node->reload;
ok( $node->wait_for_log(
		qr/DETAIL:  The file has group or world access \(mode 0644\)/, $log_offset),
	'a file others can read: refused');
is(decodes($text_a), 't', 'A still decodes');

## Retiring A ---------------------------------------------------------------------

write_keys(key_line('B'));
$node->reload;
ok($node->poll_query_until('postgres', "SELECT public_id_decodes('$text_a')", 'f'),
	'A removed from the file: its texts stop decoding at the reload');
my $r = SnowflakeTest::try_sql($node, "SELECT snowflake_from_public('$text_a')");
is($r->{sqlstate}, '22P02', 'they are refused as no public ID');
like($r->{detail}, qr/"A", names the version of its key; the keys configured are of versions B\./,
	'the detail says which versions are configured');
is($node->safe_psql('postgres', "SELECT snowflake_from_public('$text_b')"),
	$id, "B's text decodes");

## At start, a file with a fault stops the server ---------------------------------

$node->stop('fast');
write_keys(key_line('B'), "C $keys{bad}");
$log_offset = -s $node->logfile;
ok(!$node->start(fail_ok => 1), 'the server does not start with a faulty key file');
like(
	slurp_file($node->logfile, $log_offset),
	qr/FATAL:  could not load the keys of public IDs from snowflake.public_id_keys_file\n.*DETAIL:  Line 3 of the file: its key is not 32, 48 or 64 hexadecimal digits\./,
	'the log says why');
write_keys(key_line('B'), key_line('C'));
SnowflakeTest::start_node($node);
is($node->safe_psql('postgres', "SELECT snowflake_from_public('$text_b')"),
	$id, 'fixed, it starts, and B decodes');
is($node->safe_psql('postgres', 'SELECT left(snowflake_to_public(1), 1)'),
	'C', 'C encodes');

## A database without a conversion to UTF-8 ---------------------------------------

# MULE_INTERNAL has none (sql/public_id.sql has the encodings that do); 19
# removed it.
SKIP:
{
	skip 'no MULE_INTERNAL encoding on this major (19 removed it)', 3
	  unless $node->safe_psql('postgres', q{SELECT pg_char_to_encoding('MULE_INTERNAL') >= 0}) eq 't';
	$node->safe_psql('postgres',
		q{CREATE DATABASE mule ENCODING 'MULE_INTERNAL' LOCALE 'C' TEMPLATE template0});
	$node->safe_psql('mule', 'CREATE EXTENSION snowflake');
	is($node->safe_psql('mule', "SELECT snowflake_to_public($id, 'orders')"),
		$node->safe_psql('postgres', "SELECT snowflake_to_public($id, 'orders')"),
		'MULE_INTERNAL: an ASCII tweak gives the text it gives elsewhere');
	$r = SnowflakeTest::try_sql($node, qq{SELECT snowflake_to_public($id, E'caf\\x81\\xe9')},
		dbname => 'mule');
	is($r->{sqlstate}, '0A000', 'MULE_INTERNAL: a tweak beyond ASCII is refused (0A000)');
	like($r->{detail} // '', qr/no conversion from this database's encoding, MULE_INTERNAL, to UTF-8/,
		'the detail says why');
	$node->safe_psql('postgres', 'DROP DATABASE mule');
}

## No file: the functions refuse ---------------------------------------------------

$node->adjust_conf('postgresql.conf', 'snowflake.public_id_keys_file', "''");
$node->reload;
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM pg_settings
 WHERE name = 'snowflake.public_id_keys_file' AND setting = ''}),
	'the setting emptied at reload');
$r = SnowflakeTest::try_sql($node, 'SELECT snowflake_to_public(1)');
is($r->{sqlstate}, '55000', 'without keys, snowflake_to_public() refuses');
like($r->{hint}, qr/snowflake\.public_id_keys_file/, 'the hint names the setting');

## The server log holds no key material -----------------------------------------

$node->stop('fast');
my $log = slurp_file($node->logfile);
ok(length($log) > 10000, 'the log has something to search (' . length($log) . ' bytes)');
like($log, qr/invalid value for parameter "snowflake.public_id_keys_file"/,
	'it has the refusals');
for my $name (sort keys %keys)
{
	my $hex = $keys{$name};
	my @found;
	# Any 12 digits of a key in a row, in either case.
	for my $at (0 .. length($hex) - 12)
	{
		my $part = substr($hex, $at, 12);
		push @found, $part if $log =~ /\Q$part\E/i;
	}
	is(scalar(@found), 0, "no part of key $name is in the server log")
	  or diag "found: @found";
}

done_testing();
