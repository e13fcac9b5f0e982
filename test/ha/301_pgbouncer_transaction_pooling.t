# snowflake behind pgbouncer in transaction pooling mode (issue 11, part 3;
# doc/high-availability.md, "pgbouncer").
#
# A node and Debian's pgbouncer in a network namespace of their own (so
# nothing here takes a port on the host). Through pgbouncer:
#   1. pgbench, 8 clients sharing 2 server connections, INSERTs rows whose key
#      is DEFAULT snowflake_nextval(): as many rows as transactions, every ID
#      distinct, and the clients really were multiplexed.
#   2. snowflake_lastval() is session state, like lastval(): with one server
#      connection shared by two clients, it is right within a transaction
#      (the connection is the client's until COMMIT, another client waits),
#      and across transactions it reports what the last client on that server
#      connection was given, another client's ID; lastval() of a sequence
#      does exactly the same.
use strict;
use warnings;

use Netns;
use NetnsPostgres;
use Test::More;
use Time::HiRes qw(time);

Netns::guard_process(90);

my ($NODE_PORT, $POOL_PORT) = (57301, 57302);
my ($CLIENTS, $TRANSACTIONS) = (8, 250);
my $PG_BIN = $ENV{PG_BIN};

my $lab = Netns->new;
$lab->add_host('pool');    # loopback only: the node and pgbouncer talk over it
my $node = NetnsPostgres->new(
	lab => $lab,
	role => 'pool',
	name => 'node',
	port => $NODE_PORT,
	listen => '127.0.0.1',
	conf => [
		"shared_preload_libraries = 'snowflake'",
		'snowflake.datacenter_id = 3',
		'snowflake.worker_id = 7'
	]);
$node->start;
$node->psql(<<'SQL');
CREATE EXTENSION snowflake;
CREATE TABLE pooled (
	id bigint NOT NULL DEFAULT snowflake_nextval(),
	client int NOT NULL,
	backend int NOT NULL DEFAULT pg_backend_pid()
);
CREATE SEQUENCE plain_sequence;
SQL

# pgbouncer as Debian ships it, in transaction pooling mode: "postgres" with
# 2 server connections for the pgbench clients, "single" with 1 so that the
# lastval drill knows which connection each transaction runs on.
my $dir = NetnsPostgres::base_directory() . '/pgbouncer';
mkdir $dir or die "mkdir $dir: $!";
open my $ini, '>', "$dir/pgbouncer.ini" or die "pgbouncer.ini: $!";
print $ini <<"INI";
[databases]
postgres = host=127.0.0.1 port=$NODE_PORT dbname=postgres pool_size=2
single = host=127.0.0.1 port=$NODE_PORT dbname=postgres pool_size=1

[pgbouncer]
pool_mode = transaction
listen_addr = 127.0.0.1
listen_port = $POOL_PORT
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/userlist.txt
max_client_conn = 50
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
close $ini;
open my $users, '>', "$dir/userlist.txt" or die "userlist.txt: $!";
print $users qq{"postgres" ""\n};
close $users;
Netns::run('chown', '-R', 'postgres:', $dir);
Netns::run($lab->command('pool', NetnsPostgres::as_postgres('pgbouncer', '-d', "$dir/pgbouncer.ini")));
my $pool = NetnsPostgres->client('pgbouncer', $dir, $POOL_PORT);
my $single = sub { my ($sql) = @_; return $pool->psql($sql, dbname => 'single'); };
$pool->poll('SELECT true', 10) or BAIL_OUT('pgbouncer does not answer: ' . `tail -n 20 $dir/pgbouncer.log`);
note 'pgbouncer ' . (split /\n/, `pgbouncer --version`)[0];

## 1. pgbench through pgbouncer ---------------------------------------------------

open my $script, '>', "$dir/insert.sql" or die "insert.sql: $!";
print $script "INSERT INTO pooled (client) VALUES (:client_id);\n";
close $script;
my $started = time;
my $pgbench = Netns::run(NetnsPostgres::as_postgres("$PG_BIN/pgbench", '-n', '-c', $CLIENTS, '-j', 2,
	'-t', $TRANSACTIONS, '-f', "$dir/insert.sql", '-h', $dir, '-p', $POOL_PORT, 'postgres'));
my $seconds = time - $started;
my $expected = $CLIENTS * $TRANSACTIONS;
like($pgbench, qr/number of transactions actually processed: $expected\/$expected/,
	"pgbench: all $expected transactions processed") or diag $pgbench;
my ($rows, $distinct, $backends, $clients, $shared) = split /\|/, $node->psql(q{
	SELECT count(*), count(DISTINCT id), count(DISTINCT backend), count(DISTINCT client),
	       (SELECT count(*) FROM (SELECT backend FROM pooled GROUP BY backend HAVING count(DISTINCT client) > 1) s)
	FROM pooled});
is($rows, $expected, "as many rows as transactions ($expected)");
is($distinct, $rows, 'every ID distinct');
is($clients, $CLIENTS, "rows from all $CLIENTS clients");
cmp_ok($backends, '<=', 2, "through at most 2 server connections ($backends)");
cmp_ok($shared, '>=', 1, 'server connections were shared by several clients (transaction pooling)');
is($node->psql("SELECT count(*) FROM pooled WHERE (snowflake_decode(id)).worker_id <> 7"), '0',
	'every ID carries the node\'s identity');

## 2. snowflake_lastval() under transaction pooling --------------------------------

$single->('DELETE FROM pooled');
# Another client, started by the first one's psql (`\!`, as postgres already).
my $other = "$PG_BIN/psql -XAtq -h $dir -p $POOL_PORT -d single";

# Within a transaction: the server connection is this client's until COMMIT;
# another client's INSERT (started meanwhile, in the background) waits for it.
my $within = $single->(<<"SQL");
BEGIN;
INSERT INTO pooled (client) VALUES (1);
\\! $other -c 'INSERT INTO pooled (client) VALUES (2)' &
\\! sleep 0.5
SELECT snowflake_lastval() = (SELECT id FROM pooled WHERE client = 1);
COMMIT;
SQL
is($within, 't', 'within a transaction, snowflake_lastval() is this client\'s last ID');
ok($node->poll('SELECT count(*) = 1 FROM pooled WHERE client = 2', 10), 'the other client\'s INSERT ran');
is( $node->psql('SELECT (SELECT id FROM pooled WHERE client = 2) > (SELECT id FROM pooled WHERE client = 1)'),
	't', 'the other client\'s INSERT ran after that COMMIT');

# Across transactions: the next statement may run on a server connection that
# another client used meanwhile, and reports that client's ID.
my $across = $single->(<<"SQL");
INSERT INTO pooled (client) VALUES (3);
\\! $other -c 'INSERT INTO pooled (client) VALUES (4)'
SELECT snowflake_lastval() = (SELECT id FROM pooled WHERE client = 4),
       snowflake_lastval() <> (SELECT id FROM pooled WHERE client = 3);
SELECT nextval('plain_sequence') = 1;
\\! $other -c "SELECT nextval('plain_sequence')" >/dev/null
SELECT lastval() = 2;
SQL
is($across, "t|t\nt\nt",
	'across transactions, snowflake_lastval() reports another client\'s ID, as lastval() does');

diag sprintf('figures: pgbench, %d clients through pgbouncer (transaction pooling, %d server connections): %d INSERTs in %.1f s, all IDs distinct',
	$CLIENTS, $backends, $rows, $seconds);

## 3. DISCARD ALL: pgbouncer's server_reset_query in session pooling -----------

my $discarded = $node->try_psql(q{SELECT nextval('plain_sequence') > 0; DISCARD ALL; SELECT lastval();});
is($discarded->{message}, 'lastval is not yet defined in this session',
	'lastval() after DISCARD ALL: not yet defined');
# In session pooling, pgbouncer runs DISCARD ALL (its server_reset_query)
# before it hands a server connection to the next client; lastval() is then
# undefined, and so is snowflake_lastval(): the next client never reads the
# previous client's last ID.
$discarded = $node->try_psql('SELECT snowflake_nextval() > 0; DISCARD ALL; SELECT snowflake_lastval();');
is($discarded->{message}, 'snowflake_lastval is not yet defined in this session',
	'snowflake_lastval() after DISCARD ALL: not yet defined, as lastval()')
  or diag "snowflake_lastval() after DISCARD ALL returned: $discarded->{stdout}";

chomp(my $pgbouncer_pid = `cat $dir/pgbouncer.pid`);
Netns::run('kill', '-INT', $pgbouncer_pid);
$node->stop('fast');
done_testing();
