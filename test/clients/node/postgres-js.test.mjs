// postgres.js (npm's postgres): the recipe of doc/clients.md, and the traps
// of its types option: a parse to Number rounds IDs, its own postgres.BigInt
// is exact but JSON.stringify refuses it; json columns round too.
import test from 'node:test';
import assert from 'node:assert/strict';
import checks from './checks.js';

const { assertExact, assertDecodes, runSchema } = checks;
await runSchema();

// The recipe, as a module of an application would run it.
// guide: begin postgres-js
import postgres from 'postgres';

const sql = postgres(process.env.DATABASE_URL); // or postgres() with PGHOST, PGDATABASE, ...

const [{ id: customerId }] = await sql`
  INSERT INTO customers ${sql({ name: 'Ada' })} RETURNING id`;
// customerId is a string, '2125...': bigint comes back as text, exact
await sql`INSERT INTO orders ${sql({ customer_id: customerId, item: 'book' })}`;

// Bulk: one statement, every ID back
const bulkIds = (await sql`
  INSERT INTO customers ${sql([{ name: 'Grace' }, { name: 'Edsger' }, { name: 'Barbara' }])}
  RETURNING id`).map((row) => row.id);

const [found] = await sql`SELECT * FROM customers WHERE id = ${customerId}`;
const orders = await sql`SELECT * FROM orders WHERE customer_id = ${customerId}`;
const body = JSON.stringify(found); // {"id":"2125...","name":"Ada"}: exact
// guide: end

test('postgres.js: the recipe', async () => {
  await assertExact('customers', [customerId]);
  await assertExact('customers', bulkIds);
  assert.equal(bulkIds.length, 3);
  await assertDecodes(customerId);
  assert.deepEqual([found.id, found.name], [customerId, 'Ada']);
  assert.deepEqual(orders.map((order) => [order.customer_id, order.item]), [[customerId, 'book']]);
  await assertExact('orders', orders.map((order) => order.id));
  assert.equal(JSON.parse(body).id, customerId, 'a string stays exact in JSON');
  await sql.end();
});

test('postgres.js: a bigint type that parses to Number rounds IDs, and lookups miss their rows', async () => {
  // guide: begin postgres-js-trap
  const sql = postgres(process.env.DATABASE_URL, {
    types: { bigint: { to: 20, from: [20], parse: Number, serialize: String } }, // rounds above 2^53
  });
  // guide: end
  const rows = await sql`
    INSERT INTO customers (name) SELECT 'Ada' FROM generate_series(1, 100) RETURNING id, id::text AS exact`;
  const rounded = rows.filter(({ id, exact }) => String(id) !== exact);
  assert.ok(rounded.length > 0, 'some of the IDs should have been rounded');
  for (const { id, exact } of rounded) {
    assert.equal(typeof id, 'number');
    const found = await sql`SELECT id::text AS id FROM customers WHERE id = ${id}`;
    assert.ok(!found.some((row) => row.id === exact), `a lookup by ${id} (rounded from ${exact}) found it`);
  }
  await sql.end();
});

test('postgres.js: postgres.BigInt is exact, but JSON.stringify refuses it', async () => {
  const sql = postgres(process.env.DATABASE_URL, { types: { bigint: postgres.BigInt } });
  const [{ id, exact }] = await sql`INSERT INTO customers (name) VALUES ('Ada') RETURNING id, id::text AS exact`;
  assert.equal(typeof id, 'bigint');
  assert.equal(id.toString(), exact);
  assert.throws(() => JSON.stringify({ id }), /BigInt/);
  const [found] = await sql`SELECT id::text FROM customers WHERE id = ${id}`;
  assert.equal(found.id, exact, 'a BigInt parameter finds its row');
  await sql.end();
});

test('postgres.js: a json column is parsed with JSON.parse, and its IDs are rounded', async () => {
  const sql = postgres(process.env.DATABASE_URL);
  const rows = await sql`SELECT to_json(c) AS json, c.id AS exact FROM customers c`;
  assert.ok(rows.length > 100);
  assert.ok(rows.every(({ json }) => typeof json.id === 'number' && !Number.isSafeInteger(json.id)));
  assert.ok(rows.some(({ json, exact }) => String(json.id) !== exact), 'some IDs should have been rounded');
  await sql.end();
});
