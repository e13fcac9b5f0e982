// JSON and JavaScript: what each way of writing a snowflake ID in JSON gives
// JavaScript's own parser, here node's. From PostgreSQL (to_json and the
// forms doc/clients.md recommends) and from each language of the layer (the
// files its tests leave in build/clients/json: its default and its safe form).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const pg = require('pg');
const { query, checkout } = require('./checks');

// An ID JavaScript cannot hold as a number: every snowflake ID of the default
// layout issued after 2011.
function assertUnsafe(value, exact) {
  assert.equal(typeof value, 'number', `${value} should be a number`);
  assert.ok(!Number.isSafeInteger(value), `${value} (${exact}) should be past 2^53`);
}

test('JSON from PostgreSQL: to_json writes the ID as a number, past what JavaScript holds', async () => {
  await query("CREATE TABLE customers (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), name text NOT NULL);"
    + "INSERT INTO customers (name) VALUES ('Ada'), ('Grace'), ('Edsger'), ('Barbara')");
  const rows = await query(`
    -- guide: begin json-to-json
    SELECT to_json(c) FROM customers c;  -- {"id":2125..., "name":"Ada"}: a number
    -- guide: end
  `);
  const exact = (await query('SELECT id::text FROM customers ORDER BY id')).map((row) => row.id);
  // node-postgres parses json columns itself, with JSON.parse
  const parsed = rows.map((row) => row.to_json);
  parsed.forEach((row, i) => assertUnsafe(row.id, exact[i]));
  const rounded = parsed.filter((row, i) => String(row.id) !== exact[i]);
  assert.ok(rounded.length > 0, 'some of the four IDs should have been rounded');
  const [{ json_agg: aggregated }] = await query('SELECT json_agg(c ORDER BY id) FROM customers c');
  aggregated.forEach((row, i) => assertUnsafe(row.id, exact[i]));
});

test('JSON from PostgreSQL: a domain over bigint is still a number', async () => {
  await query('CREATE DOMAIN customer_id AS bigint');
  const [{ json }] = await query("SELECT json_build_object('id', snowflake_nextval()::customer_id)::text AS json");
  assert.match(json, /^\{"id" : \d+\}$/);
});

test('JSON from PostgreSQL: the ID as text or base32 arrives exact', async () => {
  const client = new pg.Client();
  await client.connect();
  const [withTextId, built, base32] = (await client.query(`
    -- guide: begin json-safe
    SELECT to_jsonb(c) || jsonb_build_object('id', c.id::text) FROM customers c;  -- every column, the id a string
    SELECT json_build_object('id', c.id::text, 'name', c.name) FROM customers c;  -- the columns named
    SELECT json_build_object('id', snowflake_to_base32(c.id)) FROM customers c;   -- {"id":"1ASD13XH1F800"}
    -- guide: end
  `)).map((result) => result.rows.map((row) => Object.values(row)[0]));
  // And parsed from the text, as a browser parses an API's response.
  const { rows: texts } = await client.query(
    "SELECT (to_jsonb(c) || jsonb_build_object('id', c.id::text))::text AS text FROM customers c");
  await client.end();
  const exact = (await query('SELECT id::text FROM customers ORDER BY 1')).map((row) => row.id);
  const sorted = (values) => [...values].sort();
  assert.deepEqual(sorted(withTextId.map((row) => row.id)), exact);
  assert.ok(withTextId.every((row) => typeof row.name === 'string'), 'and the other columns');
  assert.deepEqual(sorted(built.map((row) => row.id)), exact);
  assert.deepEqual(sorted(texts.map((row) => JSON.parse(row.text).id)), exact);
  for (const { id } of base32) assert.match(id, /^[0-9A-HJKMNP-TV-Z]{13}$/);
  const decoded = await query('SELECT snowflake_from_base32(code)::text AS id FROM unnest($1::text[]) AS code',
    [base32.map((row) => row.id)]);
  assert.deepEqual(sorted(decoded.map((row) => row.id)), exact);
});

test('JSON from PostgreSQL: a key type of its own would be written as a string (the option declined)', async () => {
  await query(fs.readFileSync(path.join(checkout, 'test/clients/json_type_probe.sql'), 'utf8'));
  const [{ text, exact }] = await query('SELECT to_json(probe)::text AS text, id::text AS exact FROM probe');
  assert.equal(JSON.parse(text).id, exact);
});

test('JSON from a node in the javascript layout: to_json and json_agg arrive exact', async () => {
  const client = new pg.Client({ port: Number(process.env.SNOWFLAKE_JAVASCRIPT_PGPORT), database: 'postgres' });
  await client.connect();
  try {
    await client.query('CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item int NOT NULL);'
      + 'INSERT INTO orders (item) SELECT g FROM generate_series(1, 1000) g');
    const exact = (await client.query('SELECT id::text FROM orders ORDER BY id')).rows.map((row) => row.id);
    // The JSON as text, parsed here as a browser parses an API's response.
    const { rows } = await client.query('SELECT to_json(o)::text AS text FROM orders o ORDER BY id');
    const parsed = rows.map((row) => JSON.parse(row.text).id);
    const [{ text: aggregated }] = (await client.query(
      'SELECT json_agg(o ORDER BY id)::text AS text FROM orders o')).rows;
    for (const ids of [parsed, JSON.parse(aggregated).map((row) => row.id)]) {
      assert.ok(ids.every(Number.isSafeInteger), 'every ID is a safe integer in JavaScript');
      assert.deepEqual(ids.map(String), exact, 'and equals the ID the server holds');
    }
    const [{ worker_id: worker }] = (await client.query(
      "SELECT worker_id FROM snowflake_decode($1::bigint, 'javascript')", [exact[0]])).rows;
    assert.equal(worker, 7);
  } finally {
    await client.end();
  }
});

// The languages whose tests leave their JSON: run before this one, in this
// run of the layer (test/clients/run.sh names them).
const writers = { psycopg: 'python', activerecord: 'ruby', pgx: 'go', laravel: 'php', 'tokio-postgres': 'rust' };
const ran = (process.env.SNOWFLAKE_CLIENTS_RAN || '').split(' ');
for (const [client, language] of Object.entries(writers)) {
  test(`JSON from ${language} (${client}): its default loses digits, its safe form does not`, { skip: !ran.includes(client) && `${client} did not run` }, () => {
    const file = path.join(checkout, 'build/clients/json', `${language}.json`);
    const { exact, forms } = JSON.parse(fs.readFileSync(file, 'utf8'));
    assertUnsafe(JSON.parse(forms.default).id, exact);
    assert.equal(JSON.parse(forms.safe).id, exact);
  });
}
