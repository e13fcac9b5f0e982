// MikroORM (npm), with defineEntity (plain JavaScript, no decorators): the
// recipe of doc/clients.md, and its traps: a bigint primary key is an
// autoincrement, which its schema generator makes a bigserial (IDs 1, 2,
// 3), and the number mode of its bigint type rounds IDs.
import test from 'node:test';
import assert from 'node:assert/strict';
import checks from './checks.js';

const { assertExact, assertDecodes, query } = checks;
// Each trap makes its own customers table, in place of the recipe's.
const dropTables = () => query('DROP TABLE IF EXISTS orders, customers');

// The recipe, as a module of an application would run it.
// guide: begin mikro-orm
import { MikroORM, defineEntity, p, wrap } from '@mikro-orm/postgresql';

// bigint in the database, the exact string in JavaScript, filled by PostgreSQL
const snowflakeKey = () => p.bigint('string').primary().autoincrement(false).defaultRaw('snowflake_nextval()');

const Customer = defineEntity({
  name: 'Customer',
  tableName: 'customers',
  properties: {
    id: snowflakeKey(),
    name: p.text(),
    orders: () => p.oneToMany(Order).mappedBy('customer'),
  },
});
const Order = defineEntity({
  name: 'Order',
  tableName: 'orders',
  properties: {
    id: snowflakeKey(),
    customer: () => p.manyToOne(Customer), // the column customer_id
    item: p.text(),
  },
});

const orm = await MikroORM.init({ clientUrl: process.env.DATABASE_URL, entities: [Customer, Order] });
await orm.schema.create(); // or a migration: id bigint NOT NULL DEFAULT snowflake_nextval()

const em = orm.em.fork();
const ada = em.create(Customer, { name: 'Ada' });
em.create(Order, { customer: ada, item: 'book' });
const bulk = ['Grace', 'Edsger', 'Barbara'].map((name) => em.create(Customer, { name }));
await em.flush(); // one INSERT ... RETURNING id per table: ada.id is the snowflake ID, a string

const found = await orm.em.fork().findOneOrFail(Customer, ada.id, { populate: ['orders'] });
const body = JSON.stringify(wrap(found).toObject()); // {"id":"2125...","name":"Ada","orders":[...]}
// guide: end

test('mikro-orm: the recipe', async () => {
  const bulkIds = bulk.map((customer) => customer.id);
  await assertExact('customers', [ada.id]);
  await assertExact('customers', bulkIds);
  assert.equal(bulkIds.length, 3);
  await assertDecodes(ada.id);
  assert.equal(found.name, 'Ada');
  const [order] = found.orders.getItems();
  assert.equal(order.item, 'book');
  await assertExact('orders', [order.id]);
  const parsed = JSON.parse(body);
  assert.equal(parsed.id, ada.id, 'the ID stays exact in JSON');
  assert.equal(parsed.orders[0].id, order.id);
  const ddl = await orm.schema.getCreateSchemaSQL();
  assert.match(ddl, /"id" bigint not null default snowflake_nextval\(\)/i);
  await orm.close();
});

test('mikro-orm: a bigint primary key left an autoincrement is a bigserial, and issues 1', async () => {
  // guide: begin mikro-orm-trap-serial
  const Customer = defineEntity({
    name: 'Customer',
    tableName: 'customers',
    properties: {
      id: p.bigint('string').primary().defaultRaw('snowflake_nextval()'), // an autoincrement: bigserial
      name: p.text(),
    },
  });
  // guide: end
  await dropTables();
  const orm = await MikroORM.init({ clientUrl: process.env.DATABASE_URL, entities: [Customer] });
  const ddl = await orm.schema.getCreateSchemaSQL();
  assert.match(ddl, /"id" bigserial primary key/i, ddl);
  await orm.schema.create();
  const em = orm.em.fork();
  const ada = em.create(Customer, { name: 'Ada' });
  await em.flush();
  assert.equal(ada.id, '1', 'the key is the bigserial\'s, not a snowflake ID');
  await orm.close();
});

test('mikro-orm: the number mode rounds IDs, and lookups then miss their rows', async () => {
  // guide: begin mikro-orm-trap-number
  const Customer = defineEntity({
    name: 'Customer',
    tableName: 'customers',
    properties: {
      id: p.bigint('number').primary().autoincrement(false).defaultRaw('snowflake_nextval()'), // rounds above 2^53
      name: p.text(),
    },
  });
  // guide: end
  await dropTables();
  const orm = await MikroORM.init({ clientUrl: process.env.DATABASE_URL, entities: [Customer] });
  await orm.schema.create();
  const em = orm.em.fork();
  const customers = ['Grace', 'Edsger', 'Barbara', 'Alan'].map((name) => em.create(Customer, { name }));
  await em.flush();
  const ids = customers.map((customer) => customer.id);
  assert.ok(ids.every((id) => typeof id === 'number' && !Number.isSafeInteger(id)), `${ids}`);
  // The exact IDs, as text, by name (the table holds these four rows only).
  const exact = new Map((await orm.em.getConnection().execute('SELECT name, id::text AS id FROM customers'))
    .map((row) => [row.name, row.id]));
  // The number is sent as its shortest decimal, String(id): the ID itself for
  // about one ID in 256, another number for the rest, whose lookups find no
  // row or the row of another ID issued in the same millisecond, never their own.
  const rounded = customers.filter(({ id, name }) => String(id) !== exact.get(name));
  assert.ok(rounded.length > 0, `some of ${ids} should have been rounded`);
  for (const { id, name } of rounded) {
    const found = await orm.em.fork().findOne(Customer, id);
    assert.ok(found === null || found.name !== name, `a lookup by ${id} (rounded from ${exact.get(name)}) found it`);
  }
  await orm.close();
});

test('mikro-orm: the default bigint mode is exact, but JSON.stringify of its BigInt throws', async () => {
  const Customer = defineEntity({
    name: 'Customer',
    tableName: 'customers',
    properties: {
      id: p.bigint().primary().autoincrement(false).defaultRaw('snowflake_nextval()'),
      name: p.text(),
    },
  });
  await dropTables();
  const orm = await MikroORM.init({ clientUrl: process.env.DATABASE_URL, entities: [Customer] });
  await orm.schema.create();
  const em = orm.em.fork();
  const ada = em.create(Customer, { name: 'Ada' });
  await em.flush();
  assert.equal(typeof ada.id, 'bigint');
  await assertExact('customers', [ada.id.toString()]);
  assert.throws(() => JSON.stringify({ id: ada.id }), /BigInt/);
  assert.equal(JSON.parse(JSON.stringify(wrap(ada).toObject())).id, ada.id.toString(), 'its serializer writes a string');
  await orm.close();
});
