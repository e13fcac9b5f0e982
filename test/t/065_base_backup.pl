# pg_basebackup, file-system copies and snapshots carry the durable bound
# (issue 18, item 4; the pgBackRest drill is 064, a copy without
# pg_snowflake/ is 061). The original node runs an hour ahead of the real
# clock under snowflake.max_lead = '1d', and two sessions issue IDs all along;
# every node made from it runs on the real clock, which alone would issue the
# original's IDs again within the hour.
#
# 1. pg_basebackup: plain with -X stream (the default) and -X fetch, tar
#    (-Ft), and -X none with the WAL from the archive. Each carries
#    pg_snowflake/state (its backup_manifest, the files, the tar); each node
#    made from it (recovered to the end of its WAL, or of the archive) issues
#    above every ID in its own tables and every ID issued before the backup
#    began, and its log says nothing about snowflake.
# 2. A copy of the stopped data directory, and a snapshot of the running one
#    (every server process stopped during the copy, as an atomic snapshot
#    sees the files): the same, from the state file and, for the snapshot,
#    crash recovery.
use strict;
use warnings FATAL => 'all';

use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes qw(usleep);

plan skip_all => 'libfaketime is not installed'
  unless SnowflakeTest::faketime_available();

my $LEAD = 3600;    # seconds the original's clock runs ahead

my $original = SnowflakeTest::init_node(
	'original',
	faketime => 1,
	allows_streaming => 1,
	has_archiving => 1,
	conf => ["snowflake.max_lead = '1d'"]);
SnowflakeTest::set_clock_offset($original, $LEAD);
SnowflakeTest::start_node($original);
$original->safe_psql('postgres', 'CREATE EXTENSION snowflake');
SnowflakeTest::create_id_writers($original);

# The highest ID issued so far, counting IDs returned to clients only.
sub issued_so_far
{
	$original->safe_psql('postgres', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 100)');
	return $original->safe_psql('postgres', 'SELECT snowflake_nextval()');
}

my @writers = SnowflakeTest::start_writers($original, 2, batch => 20);
$original->poll_query_until('postgres', 'SELECT count(*) > 1000 FROM ids')
  or die 'the writers issue no IDs';
my $lowest = $original->safe_psql('postgres', 'SELECT min(id) FROM ids');

## Backups and copies, taken while the writers issue IDs ------------------------

my @copies = (
	{ name => 'stream', label => 'pg_basebackup -X stream', options => ['-Xstream'] },
	{ name => 'fetch', label => 'pg_basebackup -X fetch', options => ['-Xfetch'] },
	{
		name => 'tar',
		label => 'pg_basebackup -Ft',
		options => [ '-Ft', '-Xstream' ],
		init => [ tar_program => 'tar' ]
	},
	{
		name => 'archive',
		label => 'pg_basebackup -X none, WAL from the archive',
		options => ['-Xnone'],
		init => [ has_restoring => 1, standby => 0 ]
	},
	{ name => 'snapshot', label => 'snapshot of the running node' },);

for my $copy (@copies)
{
	$copy->{before} = issued_so_far();
	my $path = $original->backup_dir . '/' . $copy->{name};
	if ($copy->{options})
	{
		$original->backup($copy->{name}, backup_options => $copy->{options});
		my $manifest = decode_json(slurp_file("$path/backup_manifest"));
		ok((grep { $_->{Path} eq 'pg_snowflake/state' } @{ $manifest->{Files} }),
			"$copy->{label}: its backup_manifest lists pg_snowflake/state");
	}
	else
	{
		SnowflakeTest::snapshot_node($original, $path);
	}
	if (grep { $_ eq '-Ft' } @{ $copy->{options} // [] })
	{
		like(`tar -tf $path/base.tar`, qr{^(\./)?pg_snowflake/state$}m,
			"$copy->{label}: base.tar holds pg_snowflake/state");
	}
	else
	{
		ok(-f "$path/pg_snowflake/state", "$copy->{label}: it holds pg_snowflake/state");
	}
	usleep(300_000);    # the writers go on between the copies
}

SnowflakeTest::stop_writers($original, @writers);
my $segment =
  $original->safe_psql('postgres', 'SELECT pg_walfile_name(pg_switch_wal())');
$original->poll_query_until('postgres',
	"SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver")
  or die "WAL segment $segment was not archived";
my $last_written = issued_so_far();
$original->stop;
$original->backup_fs_cold('cold');
push @copies, { name => 'cold', label => 'copy of the stopped node', before => $last_written };
ok(-f $original->backup_dir . '/cold/pg_snowflake/state',
	'copy of the stopped node: it holds pg_snowflake/state');

## Nodes made from each, on the real clock ------------------------------------------

for my $copy (@copies)
{
	my $node = PostgreSQL::Test::Cluster->new($copy->{name});
	$node->init_from_backup($original, $copy->{name}, @{ $copy->{init} // [] });
	$node->append_conf('postgresql.conf', 'archive_mode = off');
	SnowflakeTest::remember_node($node);
	$node->start;
	$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die "$copy->{label}: the node did not leave recovery";
	my ($rows, $highest) =
	  split /\|/, $node->safe_psql('postgres', 'SELECT count(*), max(id) FROM ids');
	cmp_ok($rows, '>', 1000, "$copy->{label}: the node has the rows ($rows)");
	is($node->safe_psql('postgres', "SELECT snowflake_min_id(clock_timestamp()) < $lowest"),
		't', "$copy->{label}: its clock alone would issue the original's IDs again");
	my $first = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
	cmp_ok($first, '>', $highest, "$copy->{label}: its first ID is above every ID in its tables");
	cmp_ok($first, '>', $copy->{before},
		"$copy->{label}: and above every ID issued before the copy began");
	is(SnowflakeTest::snowflake_log_lines($node), '',
		"$copy->{label}: its server log says nothing about snowflake but its WAL resource manager");
	$copy->{rows} = $rows;
	$node->stop;
}

my %rows = map { $_->{name} => $_->{rows} } @copies;
is($rows{archive}, $rows{cold},
	'-X none, WAL from the archive: recovered every row (as many as the stopped node has)');

done_testing();
