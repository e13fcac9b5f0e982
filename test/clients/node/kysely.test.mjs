// Kysely (npm), over node-postgres: the recipe of doc/clients.md, and its
// traps: insertId, which PostgreSQL never fills, and the IDs of the nested
// rows its jsonArrayFrom helper builds with json_agg, which are JSON numbers.
import test from 'node:test';
import assert from 'node:assert/strict';
import checks from './checks.js';

const { assertExact, assertDecodes } = checks;

// The recipe, as a module of an application would run it.
// guide: begin kysely
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';

const db = new Kysely({
  dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) }),
});

await db.schema.createTable('customers')
  .addColumn('id', 'bigint', (column) => column.primaryKey().defaultTo(sql`snowflake_nextval()`))
  .addColumn('name', 'text', (column) => column.notNull())
  .execute();
await db.schema.createTable('orders')
  .addColumn('id', 'bigint', (column) => column.primaryKey().defaultTo(sql`snowflake_nextval()`))
  .addColumn('customer_id', 'bigint', (column) => column.notNull().references('customers.id'))
  .addColumn('item', 'text', (column) => column.notNull())
  .execute();

const { id: customerId } = await db.insertInto('customers')
  .values({ name: 'Ada' }).returning('id').executeTakeFirstOrThrow(); // a string, exact
await db.insertInto('orders').values({ customer_id: customerId, item: 'book' }).execute();
const bulkIds = (await db.insertInto('customers')
  .values([{ name: 'Grace' }, { name: 'Edsger' }, { name: 'Barbara' }])
  .returning('id').execute()).map((row) => row.id);

const found = await db.selectFrom('customers').selectAll()
  .where('id', '=', customerId).executeTakeFirstOrThrow();
const withOrders = await db.selectFrom('customers')
  .innerJoin('orders', 'orders.customer_id', 'customers.id')
  .select(['customers.id', 'customers.name', 'orders.id as order_id', 'orders.item'])
  .where('customers.id', '=', customerId).execute();
// guide: end

test('kysely: the recipe', async () => {
  await assertExact('customers', [customerId]);
  await assertExact('customers', bulkIds);
  assert.equal(bulkIds.length, 3);
  await assertDecodes(customerId);
  assert.deepEqual([found.id, found.name], [customerId, 'Ada']);
  assert.equal(withOrders.length, 1);
  assert.deepEqual([withOrders[0].id, withOrders[0].item], [customerId, 'book']);
  await assertExact('orders', [withOrders[0].order_id]);
  assert.equal(JSON.parse(JSON.stringify(found)).id, customerId, 'a string stays exact in JSON');
});

test('kysely: insertId is undefined on PostgreSQL; returning gives the ID', async () => {
  // guide: begin kysely-trap-insert-id
  const result = await db.insertInto('customers').values({ name: 'Alan' }).executeTakeFirstOrThrow();
  result.insertId; // undefined on PostgreSQL: only MySQL and SQLite fill it
  // guide: end
  assert.equal(result.insertId, undefined);
  assert.equal(result.numInsertedOrUpdatedRows, 1n);
});

test('kysely: jsonArrayFrom writes nested IDs as JSON numbers, rounded; as text they stay exact', async () => {
  const { jsonArrayFrom } = await import('kysely/helpers/postgres');
  await db.insertInto('orders')
    .values(['pen', 'ink', 'paper'].map((item) => ({ customer_id: customerId, item }))).execute();
  // guide: begin kysely-trap-json
  const rounded = await db.selectFrom('customers').select((eb) => ['id', jsonArrayFrom(
    eb.selectFrom('orders').select(['orders.id', 'orders.item']) // orders.id: a JSON number, rounded
      .whereRef('orders.customer_id', '=', 'customers.id'),
  ).as('orders')]).where('id', '=', customerId).executeTakeFirstOrThrow();

  const exact = await db.selectFrom('customers').select((eb) => ['id', jsonArrayFrom(
    eb.selectFrom('orders').select([eb.cast('orders.id', 'text').as('id'), 'orders.item']) // a string
      .whereRef('orders.customer_id', '=', 'customers.id'),
  ).as('orders')]).where('id', '=', customerId).executeTakeFirstOrThrow();
  // guide: end
  const held = (await db.selectFrom('orders').select(sql`id::text`.as('id'))
    .where('customer_id', '=', customerId).execute()).map((row) => row.id).sort();
  assert.equal(held.length, 4);
  const roundedIds = rounded.orders.map((order) => order.id);
  assert.ok(roundedIds.every((id) => typeof id === 'number' && !Number.isSafeInteger(id)), `${roundedIds}`);
  assert.ok(roundedIds.some((id) => !held.includes(String(id))), `some of ${roundedIds} should have been rounded`);
  assert.deepEqual(exact.orders.map((order) => order.id).sort(), held);
  await db.destroy();
});
