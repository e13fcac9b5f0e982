// What every Node test of the clients layer asserts about the IDs it got
// back, checked on the server through a node-postgres client of its own: each
// ID is one the server holds, digit for digit; it decodes to this node.
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const pg = require('pg');

const checkout = process.env.SNOWFLAKE_CHECKOUT;

async function query(text, values) {
  const client = new pg.Client();
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

// The IDs among ids that table holds, as the server writes them.
async function held(table, ids) {
  const rows = await query(`SELECT id::text FROM ${table} WHERE id::text = ANY($1) ORDER BY 1`, [ids.map(String)]);
  return rows.map((row) => row.id);
}

async function assertExact(table, ids) {
  for (const id of ids) assert.equal(typeof id, 'string', `${id} is a ${typeof id}, not a string`);
  assert.equal(new Set(ids).size, ids.length, `repeated IDs in ${ids}`);
  assert.deepEqual(await held(table, ids), [...ids].sort(), `${table} does not hold exactly these IDs`);
}

async function assertDecodes(id) {
  const [row] = await query(
    'SELECT datacenter_id, worker_id, abs(extract(epoch FROM now() - ts)) < 300 AS recent FROM snowflake_decode($1)', [id]);
  assert.deepEqual([row.datacenter_id, row.worker_id],
    [Number(process.env.SNOWFLAKE_DATACENTER_ID), Number(process.env.SNOWFLAKE_WORKER_ID)]);
  assert.ok(row.recent, `${id} does not decode to now`);
}

async function runSchema() {
  await query(fs.readFileSync(path.join(checkout, 'test/clients/schema.sql'), 'utf8'));
}

module.exports = { query, held, assertExact, assertDecodes, runSchema, checkout };
