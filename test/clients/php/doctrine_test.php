<?php
// Doctrine DBAL and ORM (Debian's php-doctrine-dbal and php-doctrine-orm:
// DBAL 3 and ORM 2 on bookworm, DBAL 4 and ORM 3 on forky): the recipe of
// doc/clients.md, a CUSTOM id generator that takes snowflake_nextval() before
// the INSERT, persist() and flush(), a relation; and the traps: DBAL's
// lastInsertId(), and the IDENTITY and AUTO strategies, each shown to give an
// entity no key or the wrong one.

declare(strict_types=1);
require __DIR__ . '/checks.php';
require '/usr/share/php/Doctrine/ORM/autoload.php';

use Doctrine\Common\Collections\ArrayCollection;
use Doctrine\Common\Collections\Collection;
use Doctrine\DBAL\Connection;
use Doctrine\DBAL\DriverManager;
use Doctrine\DBAL\Types\BigIntType;
use Doctrine\ORM\EntityManager;
use Doctrine\ORM\EntityManagerInterface;
use Doctrine\ORM\Id\AbstractIdGenerator;
use Doctrine\ORM\Mapping as ORM;
use Doctrine\ORM\Configuration;
use Doctrine\ORM\Mapping\Driver\AttributeDriver;

// guide: begin doctrine-generator
// Takes the next snowflake ID before the INSERT, as Doctrine's SEQUENCE
// strategy takes a sequence's: the entity has its key at persist().
class SnowflakeIdGenerator extends AbstractIdGenerator
{
    public function generateId(EntityManagerInterface $em, $entity): mixed
    {
        return $em->getConnection()->fetchOne('SELECT snowflake_nextval()');
    }
}
// guide: end

// guide: begin doctrine-entities
#[ORM\Entity, ORM\Table(name: 'customers')]
class Customer
{
    #[ORM\Id, ORM\Column(type: 'bigint')]
    #[ORM\GeneratedValue(strategy: 'CUSTOM'), ORM\CustomIdGenerator(class: SnowflakeIdGenerator::class)]
    public int|string|null $id = null; // DBAL 3 gives bigint as a string, DBAL 4 as an int

    #[ORM\Column(type: 'text')]
    public string $name;

    #[ORM\OneToMany(targetEntity: Order::class, mappedBy: 'customer')]
    public Collection $orders;

    public function __construct(string $name)
    {
        $this->name = $name;
        $this->orders = new ArrayCollection();
    }
}

#[ORM\Entity, ORM\Table(name: 'orders')]
class Order
{
    #[ORM\Id, ORM\Column(type: 'bigint')]
    #[ORM\GeneratedValue(strategy: 'CUSTOM'), ORM\CustomIdGenerator(class: SnowflakeIdGenerator::class)]
    public int|string|null $id = null;

    #[ORM\ManyToOne(targetEntity: Customer::class, inversedBy: 'orders')]
    #[ORM\JoinColumn(name: 'customer_id', nullable: false)]
    public Customer $customer;

    #[ORM\Column(type: 'text')]
    public string $item;
}
// guide: end

// The traps: the same table, the key left to Doctrine's IDENTITY and AUTO.
#[ORM\Entity, ORM\Table(name: 'customers')]
class IdentityCustomer
{
    // guide: begin doctrine-trap
    #[ORM\Id, ORM\Column(type: 'bigint'), ORM\GeneratedValue(strategy: 'IDENTITY')] // or AUTO
    // guide: end
    public int|string|null $id = null;

    #[ORM\Column(type: 'text')]
    public string $name = 'Grace';
}

#[ORM\Entity, ORM\Table(name: 'customers')]
class AutoCustomer
{
    #[ORM\Id, ORM\Column(type: 'bigint'), ORM\GeneratedValue(strategy: 'AUTO')]
    public int|string|null $id = null;

    #[ORM\Column(type: 'text')]
    public string $name = 'Edsger';
}

/** A new DBAL connection to the client's database. */
function dbal(): Connection
{
    return DriverManager::getConnection([
        'driver' => 'pdo_pgsql', 'host' => getenv('PGHOST'), 'port' => (int) getenv('PGPORT'),
        'dbname' => getenv('PGDATABASE'), 'user' => getenv('PGUSER'),
    ]);
}

/** A new entity manager on a new connection. */
function entity_manager(): EntityManager
{
    // As ORMSetup::createAttributeMetadataConfiguration() makes it, without
    // the caches it wants symfony/cache for (Debian's php-doctrine-orm does not
    // depend on it).
    $config = new Configuration();
    $config->setMetadataDriverImpl(new AttributeDriver([__DIR__]));
    $config->setProxyDir(sys_get_temp_dir() . '/snowflake-doctrine-proxies');
    $config->setProxyNamespace('Proxies');
    $config->setAutoGenerateProxyClasses(true);
    if (PHP_VERSION_ID >= 80400 && method_exists($config, 'enableNativeLazyObjects')) {
        $config->enableNativeLazyObjects(true); // ORM 3.4 and later on PHP 8.4
    }
    return new EntityManager(dbal(), $config);
}

/** ORM 3 (forky's) or 2 (bookworm's): ORM 3 removed EntityManager::create(). */
function orm_major(): int
{
    return method_exists(EntityManager::class, 'create') ? 2 : 3;
}

/** What DBAL makes of a bigint: an int with DBAL 4, a string with DBAL 3. */
function bigint_type(): string
{
    return (new ReflectionMethod(BigIntType::class, 'convertToPHPValue'))->hasReturnType() ? 'int' : 'string';
}

run_schema(dbal()->getNativeConnection());
dbal()->executeStatement('CREATE TABLE audit_log (id serial PRIMARY KEY, entry text NOT NULL)');

run_tests([
    'DBAL: the recipe, RETURNING id' => function () {
        $connection = dbal();
        // guide: begin dbal
        $customerId = $connection->fetchOne('INSERT INTO customers (name) VALUES (?) RETURNING id', ['Ada']);
        $connection->insert('orders', ['customer_id' => $customerId, 'item' => 'book']);
        $bulkIds = $connection->fetchFirstColumn(
            'INSERT INTO customers (name) VALUES (?), (?), (?) RETURNING id', ['Grace', 'Edsger', 'Barbara']
        );
        // guide: end
        check_exact('customers', [$customerId]);
        check_exact('customers', $bulkIds);
        check_decodes($customerId);
    },

    'DBAL: the trap, lastInsertId() after a serial insert' => function () {
        $connection = dbal();
        // guide: begin dbal-trap
        $connection->insert('audit_log', ['entry' => 'order placed']); // a serial key
        $connection->insert('customers', ['name' => 'Ada']);
        $customerId = $connection->lastInsertId(); // audit_log's key, not the customer's
        // guide: end
        $serial = $connection->fetchOne('SELECT max(id) FROM audit_log');
        check_same((string) $serial, (string) $customerId, 'lastInsertId() is the serial key');
        check_same([], ids_held('customers', [$customerId]), 'customers holding that key');
    },

    'ORM: persist and flush with the CUSTOM generator' => function () {
        $em = entity_manager();
        // guide: begin doctrine
        $ada = new Customer('Ada');
        $em->persist($ada); // $ada->id: the snowflake ID, taken now
        $order = new Order();
        $order->customer = $ada;
        $order->item = 'book';
        $em->persist($order);
        $bulk = array_map(fn ($name) => new Customer($name), ['Grace', 'Edsger', 'Barbara']);
        array_walk($bulk, [$em, 'persist']);
        $em->flush();
        // guide: end
        $type = bigint_type();
        check_exact('customers', [$ada->id], $type);
        check_exact('orders', [$order->id], $type);
        check_exact('customers', array_map(fn ($customer) => $customer->id, $bulk), $type);
        check_decodes($ada->id);

        $em->clear();
        $found = entity_manager()->find(Customer::class, $ada->id);
        check_same('Ada', $found->name, 'find()');
        check_same('book', $found->orders->first()->item, 'the relation');
        check_same((string) $ada->id, (string) $found->orders->first()->customer->id, "the order's customer");
    },

    'ORM: the trap, IDENTITY reads lastval() or a sequence the table does not have' => function () {
        $em = entity_manager();
        $em->getConnection()->insert('audit_log', ['entry' => 'order placed']); // a serial key
        $serial = $em->getConnection()->fetchOne('SELECT max(id) FROM audit_log');
        $grace = new IdentityCustomer();
        $em->persist($grace);
        try {
            $em->flush();
        } catch (Doctrine\DBAL\Exception $error) {
            // ORM 2 asks DBAL 3 for currval('customers_id_seq'), which does not exist
            check(orm_major() < 3, 'ORM ' . orm_major() . ': ' . $error->getMessage());
            check(str_contains($error->getMessage(), 'customers_id_seq'), $error->getMessage());
            return;
        }
        // ORM 3 asks DBAL 4 for lastval(): the serial key, silently
        check(orm_major() >= 3, 'ORM 2 flushed an IDENTITY entity: id ' . var_export($grace->id, true));
        check_same((string) $serial, (string) $grace->id, 'the IDENTITY key is the serial key');
        check_same([], ids_held('customers', [$grace->id]), 'customers holding that key');
    },

    'ORM: the trap, AUTO: a sequence of its own (ORM 2) or IDENTITY (ORM 3)' => function () {
        $em = entity_manager();
        $edsger = new AutoCustomer();
        try {
            $em->persist($edsger);
            $em->flush();
            throw new Failed('AUTO flushed, id ' . var_export($edsger->id, true));
        } catch (Doctrine\DBAL\Exception $error) {
            if (orm_major() < 3) {
                // SEQUENCE on PostgreSQL: nextval('customers_id_seq'), a sequence
                // the schema tool would have made to issue 1, 2, 3...
                check(str_contains($error->getMessage(), "NEXTVAL('customers_id_seq')"), $error->getMessage());
            } else {
                // IDENTITY on PostgreSQL: lastval(), undefined in this session
                check(str_contains($error->getMessage(), 'No identity value was generated'), $error->getMessage());
            }
        }
        check_same(null, $edsger->id === null ? null : ids_held('customers', [$edsger->id]), 'the AUTO key');
    },
]);
