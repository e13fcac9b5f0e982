// Drizzle ORM (npm): the recipe of doc/clients.md, and the trap of its
// bigint number mode, which rounds IDs.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { assertExact, assertDecodes, runSchema } = require('./checks');
const { pgTable, bigint, text } = require('drizzle-orm/pg-core');

test('drizzle: the recipe', async () => {
  await runSchema(); // the tables, as drizzle-kit would make them from these
  // guide: begin drizzle
  const { drizzle } = require('drizzle-orm/node-postgres');
  const { pgTable, customType, text } = require('drizzle-orm/pg-core');
  const { eq, sql } = require('drizzle-orm');

  // bigint in the database, the exact string node-postgres returns in JavaScript
  const snowflakeId = customType({ dataType: () => 'bigint' });

  const customers = pgTable('customers', {
    id: snowflakeId('id').primaryKey().default(sql`snowflake_nextval()`),
    name: text('name').notNull(),
  });
  const orders = pgTable('orders', {
    id: snowflakeId('id').primaryKey().default(sql`snowflake_nextval()`),
    customerId: snowflakeId('customer_id').notNull().references(() => customers.id),
    item: text('item').notNull(),
  });

  const db = drizzle(process.env.DATABASE_URL);
  const [{ id: customerId }] = await db.insert(customers)
    .values({ name: 'Ada' }).returning({ id: customers.id });
  await db.insert(orders).values({ customerId, item: 'book' });
  const bulkIds = (await db.insert(customers)
    .values([{ name: 'Grace' }, { name: 'Edsger' }, { name: 'Barbara' }])
    .returning({ id: customers.id })).map((row) => row.id);
  const [found] = await db.select().from(customers).where(eq(customers.id, customerId));
  // guide: end
  await assertExact('customers', [customerId]);
  await assertExact('customers', bulkIds);
  assert.equal(bulkIds.length, 3);
  assert.equal(found.name, 'Ada');
  await assertDecodes(customerId);
  const [order] = await db.select().from(orders).where(eq(orders.customerId, customerId));
  assert.equal(order.item, 'book');
  await db.$client.end();
});

test('drizzle: the number mode rounds IDs, and lookups then find nothing', async () => {
  const { drizzle } = require('drizzle-orm/node-postgres');
  const { eq } = require('drizzle-orm');
  // guide: begin drizzle-trap
  const customers = pgTable('customers', {
    id: bigint('id', { mode: 'number' }).primaryKey(), // rounds above 2^53
    name: text('name').notNull(),
  });
  // guide: end
  const db = drizzle(process.env.DATABASE_URL);
  const rows = await db.insert(customers)
    .values([{ name: 'Grace' }, { name: 'Edsger' }, { name: 'Barbara' }, { name: 'Alan' }])
    .returning({ id: customers.id });
  const ids = rows.map((row) => row.id);
  assert.ok(ids.every((id) => typeof id === 'number' && !Number.isSafeInteger(id)), `${ids}`);
  let rounded = 0;
  for (const id of ids) {
    const { rows: [{ exact }] } = await db.$client.query(
      'SELECT count(*)::int AS exact FROM customers WHERE id::text = $1', [String(id)]);
    if (exact === 0) {
      rounded += 1;
      const found = await db.select().from(customers).where(eq(customers.id, id));
      assert.equal(found.length, 0, `a lookup by ${id}, rounded, finds no row`);
    }
  }
  assert.ok(rounded > 0, `some of ${ids} should have been rounded`);
  await db.$client.end();
});
