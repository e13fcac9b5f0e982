// node-postgres (npm's pg): the recipe of doc/clients.md, and the trap of a
// type parser that turns bigint into a JavaScript number.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { assertExact, assertDecodes, runSchema } = require('./checks');

test('node-postgres: the recipe', async () => {
  await runSchema();
  // guide: begin node-postgres
  const { Pool } = require('pg');
  const pool = new Pool(); // PGHOST, PGDATABASE, ... or { connectionString }

  const { rows: [{ id: customerId }] } = await pool.query(
    'INSERT INTO customers (name) VALUES ($1) RETURNING id', ['Ada']);
  // customerId is a string, '2125...': bigint comes back as text, exact
  await pool.query(
    'INSERT INTO orders (customer_id, item) VALUES ($1, $2)', [customerId, 'book']);

  // Bulk: one statement, every ID back
  const { rows } = await pool.query(
    'INSERT INTO customers (name) SELECT unnest($1::text[]) RETURNING id',
    [['Grace', 'Edsger', 'Barbara']]);
  const bulkIds = rows.map((row) => row.id);

  const { rows: [decoded] } = await pool.query(
    'SELECT * FROM snowflake_decode($1)', [customerId]);
  // guide: end
  await assertExact('customers', [customerId]);
  await assertExact('customers', bulkIds);
  assert.equal(bulkIds.length, 3);
  await assertDecodes(customerId);
  assert.deepEqual([decoded.datacenter_id, decoded.worker_id], [3, 7]);
  assert.equal(JSON.parse(JSON.stringify({ id: customerId })).id, customerId, 'a string stays exact in JSON');
  const { rows: [order] } = await pool.query(
    'SELECT o.item FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.id = $1', [customerId]);
  assert.equal(order.item, 'book');
  await pool.end();
});

test('node-postgres: the parseInt trap rounds IDs, and lookups then miss their rows', async () => {
  const pg = require('pg');
  const { types } = pg;
  const parser = types.getTypeParser(20);
  try {
    // guide: begin node-postgres-trap
    types.setTypeParser(20, parseInt); // bigint as a number: rounds above 2^53
    // guide: end
    const pool = new pg.Pool();
    // A lookup by a rounded ID never finds its row: it finds none, or the row
    // of another ID, as the rounded number, written in decimal, is within 256
    // of the ID and so often one issued in the same millisecond. How often
    // depends on how many IDs a millisecond holds, fewer on a loaded machine:
    // batches of a thousand IDs of one statement, until one shows it.
    let others = 0;
    let lookups = 0;
    for (let batch = 0; batch < 10 && others === 0; batch += 1) {
      const { rows } = await pool.query(
        "INSERT INTO customers (name) SELECT 'Ada' FROM generate_series(1, 1000) RETURNING id, id::text AS exact");
      const rounded = rows.filter(({ id, exact }) => String(id) !== exact);
      assert.ok(rounded.length > 0, 'some of the IDs should have been rounded');
      for (const { id, exact } of rounded) {
        assert.equal(typeof id, 'number');
        const { rows: found } = await pool.query('SELECT id::text AS id FROM customers WHERE id = $1', [id]);
        assert.ok(!found.some((row) => row.id === exact), `a lookup by ${id} (rounded from ${exact}) found it`);
        if (found.length > 0) others += 1;
        lookups += 1;
      }
    }
    assert.ok(others > 0, `of ${lookups} lookups by a rounded ID, none found another ID's row`);
    await pool.end();
  } finally {
    types.setTypeParser(20, parser);
  }
});

test('node-postgres: BigInt is exact, but JSON.stringify refuses it', async () => {
  const pg = require('pg');
  const pool = new pg.Pool({ types: { getTypeParser: (oid, format) => (oid === 20 ? BigInt : pg.types.getTypeParser(oid, format)) } });
  const { rows: [{ id, exact }] } = await pool.query(
    "INSERT INTO customers (name) VALUES ('Ada') RETURNING id, id::text AS exact");
  assert.equal(typeof id, 'bigint');
  assert.equal(id.toString(), exact);
  assert.throws(() => JSON.stringify({ id }), /BigInt/);
  await pool.end();
});
