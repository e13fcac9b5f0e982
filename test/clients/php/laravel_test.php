<?php
// Laravel's Eloquent and schema builder (Debian's php-illuminate-database:
// Laravel 8 on bookworm, 13 on forky), standalone through Capsule, with the
// Schema and DB facades bound as a Laravel application binds them: the
// migration and the models of doc/clients.md, create(), find(), a relation,
// toJson(); and the traps: $table->id() makes a bigserial, and toJson() of an
// uncast key writes a JSON number that JavaScript rounds.

declare(strict_types=1);
require __DIR__ . '/checks.php';
require '/usr/share/php/Illuminate/Database/autoload.php';

use Illuminate\Database\Capsule\Manager as Capsule;
use Illuminate\Database\Eloquent\Model;
use Illuminate\Database\Migrations\Migration;
use Illuminate\Database\Schema\Blueprint;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\Facade;
use Illuminate\Support\Facades\Schema;

$capsule = new Capsule();
$capsule->addConnection([
    'driver' => 'pgsql', 'host' => getenv('PGHOST'), 'port' => getenv('PGPORT'),
    'database' => getenv('PGDATABASE'), 'username' => getenv('PGUSER'), 'password' => '',
]);
$capsule->setAsGlobal();
$capsule->bootEloquent();
$app = $capsule->getContainer();
$app->instance('db', $capsule->getDatabaseManager());
$app->bind('db.schema', fn ($app) => $app['db']->connection()->getSchemaBuilder());
Facade::setFacadeApplication($app);

// guide: begin laravel-migration
$migration = new class extends Migration {
    public function up(): void
    {
        DB::statement('CREATE EXTENSION IF NOT EXISTS snowflake');
        Schema::create('customers', function (Blueprint $table) {
            // not $table->id(): that is a bigserial, 1, 2, 3...
            $table->bigInteger('id')->primary()->default(DB::raw('snowflake_nextval()'));
            $table->text('name');
        });
        Schema::create('orders', function (Blueprint $table) {
            $table->bigInteger('id')->primary()->default(DB::raw('snowflake_nextval()'));
            $table->foreignId('customer_id')->constrained(); // a bigint column
            $table->text('item');
        });
    }
};
// guide: end
$migration->up();

// guide: begin laravel-models
class Customer extends Model
{
    public $timestamps = false;
    protected $fillable = ['name'];
    // PHP's int holds the ID; JSON for JavaScript needs a string (see "JSON")
    protected $casts = ['id' => 'string'];

    public function orders()
    {
        return $this->hasMany(Order::class);
    }
}

class Order extends Model
{
    public $timestamps = false;
    protected $fillable = ['item'];
    protected $casts = ['id' => 'string', 'customer_id' => 'string'];

    public function customer()
    {
        return $this->belongsTo(Customer::class);
    }
}
// guide: end

// The trap: a model whose key is left to Eloquent's int cast.
class PlainCustomer extends Model
{
    public $timestamps = false;
    protected $table = 'customers';
    protected $fillable = ['name'];
}

run_tests([
    'the recipe: create, find, a relation, JSON' => function () {
        // guide: begin laravel
        $ada = Customer::create(['name' => 'Ada']); // INSERT ... RETURNING "id"
        $order = $ada->orders()->create(['item' => 'book']);
        $found = Customer::with('orders')->find($ada->id);
        $json = $found->toJson(); // {"id":"2125...","name":"Ada","orders":[{"id":"2125...",...}]}
        // guide: end
        check_exact('customers', [$ada->id], 'string');
        check_exact('orders', [$order->id], 'string');
        check_decodes($ada->id);
        check_same($ada->id, $order->customer_id, "the order's customer_id");
        check_same('book', $found->orders->first()->item, 'the relation');
        check_same($ada->id, Order::find($order->id)->customer->id, 'belongsTo');
        $decoded = json_decode($json, true);
        check_same($ada->id, $decoded['id'], 'the id in toJson()');
        check_same($order->id, $decoded['orders'][0]['id'], "the order's id in toJson()");
        check_same($ada->id, $decoded['orders'][0]['customer_id'], "the order's customer_id in toJson()");

        // How PHP writes the ID in JSON, for the layer's JSON test in node.
        $plain = PlainCustomer::find($ada->id);
        check(is_int($plain->id), 'an uncast key is an int');
        $dir = __DIR__ . '/../../../build/clients/json';
        @mkdir($dir, 0777, true);
        file_put_contents("$dir/php.json", json_encode([
            'exact' => ids_held('customers', [$ada->id])[0],
            'forms' => ['default' => $plain->toJson(), 'safe' => $found->toJson()],
        ]));
    },

    'the trap: $table->id() makes a bigserial' => function () {
        Schema::create('serial_customers', function (Blueprint $table) {
            // guide: begin laravel-trap
            $table->id(); // bigserial: 1, 2, 3...
            // guide: end
            $table->text('name');
        });
        $first = DB::table('serial_customers')->insertGetId(['name' => 'Grace']);
        check_same(1, $first, 'the first key of $table->id()');
        $default = DB::selectOne("SELECT column_default FROM information_schema.columns WHERE table_name = 'serial_customers' AND column_name = 'id'");
        check(str_starts_with($default->column_default, 'nextval('), $default->column_default);
    },

    'the trap: an uncast key is a JSON number' => function () {
        $plain = PlainCustomer::create(['name' => 'Edsger']);
        check(is_int($plain->id), 'the key is an int');
        check(preg_match('/^\{"name":"Edsger","id":[0-9]{19}\}$/', $plain->toJson()) === 1, $plain->toJson());
        check_exact('customers', [$plain->id]);
    },
]);
