# DBD::Pg (Debian's libdbd-pg-perl): the recipe of doc/clients.md, and the
# last_insert_id trap: it reads a sequence, and a snowflake default has none.
use strict;
use warnings;
use DBI;
use File::Basename qw(dirname);
use Test::More;

my $schema = do { local (@ARGV, $/) = (dirname(__FILE__) . '/../schema.sql'); <> };
my $setup = DBI->connect('dbi:Pg:', undef, undef, { RaiseError => 1, PrintError => 0 });
$setup->do($schema);
$setup->do('CREATE TABLE audit_log (id serial PRIMARY KEY, entry text NOT NULL)');

# The IDs among @ids that $table holds, as the server writes them.
sub held
{
	my ($table, @ids) = @_;
	return $setup->selectcol_arrayref(
		"SELECT id::text FROM $table WHERE id::text = ANY(?) ORDER BY id::text",
		undef, [ map {"$_"} @ids ]);
}

# guide: begin dbd-pg
my $dbh = DBI->connect('dbi:Pg:', undef, undef, { RaiseError => 1, PrintError => 0, AutoCommit => 1 });  # libpq's PG* variables
my ($customer_id) = $dbh->selectrow_array(
	'INSERT INTO customers (name) VALUES (?) RETURNING id', undef, 'Ada');
$dbh->do('INSERT INTO orders (customer_id, item) VALUES (?, ?)', undef, $customer_id, 'book');

# Bulk: one statement, every ID back
my $bulk_ids = $dbh->selectcol_arrayref(
	'INSERT INTO customers (name) SELECT unnest(?::text[]) RETURNING id',
	undef, [ 'Grace', 'Edsger', 'Barbara' ]);

my ($datacenter_id, $worker_id) = $dbh->selectrow_array(
	'SELECT datacenter_id, worker_id FROM snowflake_decode(?)', undef, $customer_id);
# guide: end

like($customer_id, qr/^[0-9]{19}$/, 'the ID: 19 digits (a Perl integer: 64 bits)');
is_deeply(held('customers', $customer_id), ["$customer_id"], 'customers holds the ID, exactly');
is(scalar @$bulk_ids, 3, 'three bulk IDs');
is_deeply(held('customers', @$bulk_ids), [ sort map {"$_"} @$bulk_ids ], 'customers holds the bulk IDs');
is_deeply([ $datacenter_id, $worker_id ], [ $ENV{SNOWFLAKE_DATACENTER_ID}, $ENV{SNOWFLAKE_WORKER_ID} ],
	'it decodes to this node');
is($dbh->selectrow_array("SELECT customer_id::text FROM orders WHERE item = 'book'"),
	"$customer_id", 'the foreign key');

# The trap: last_insert_id finds the table's sequence from its key's default,
# and snowflake_nextval() is none.
$dbh->do('INSERT INTO customers (name) VALUES (?)', undef, 'Barbara');
my $id = eval {
	# guide: begin dbd-pg-trap
	$dbh->last_insert_id(undef, undef, 'customers', undef);  # dies: no sequence
	# guide: end
};
ok(!defined $id, 'last_insert_id on customers gives no ID');
like($@, qr/last_insert_id/i, "last_insert_id dies: $@");

# ... and with a sequence named, it is that sequence's value, not the row's.
$dbh->do("INSERT INTO audit_log (entry) VALUES ('order placed')");
$dbh->do('INSERT INTO customers (name) VALUES (?)', undef, 'Grace');
my $wrong = $dbh->last_insert_id(undef, undef, undef, undef, { sequence => 'audit_log_id_seq' });
is($wrong, $dbh->selectrow_array('SELECT max(id) FROM audit_log'), 'a sequence named: its value');
is_deeply(held('customers', $wrong), [], 'which no customer has');

# snowflake_lastval(): the last snowflake ID this session issued.
my ($last) = $dbh->selectrow_array('SELECT snowflake_lastval()');
is($last, $dbh->selectrow_array("SELECT max(id) FROM customers WHERE name = 'Grace'"), 'snowflake_lastval()');

done_testing();
