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

test('drizzle: the number mode rounds IDs, and lookups then miss their rows', async () => {
  const { drizzle } = require('drizzle-orm/node-postgres');
  const { eq, sql } = require('drizzle-orm');
  // guide: begin drizzle-trap
  const customers = pgTable('customers', {
    id: bigint('id', { mode: 'number' }).primaryKey(), // rounds above 2^53
    name: text('name').notNull(),
  });
  // guide: end
  const db = drizzle(process.env.DATABASE_URL);
  const exactId = sql`${customers.id}::text`;
  const rows = await db.insert(customers)
    .values([{ name: 'Grace' }, { name: 'Edsger' }, { name: 'Barbara' }, { name: 'Alan' }])
    .returning({ id: customers.id, exact: exactId });
  assert.ok(rows.every(({ id }) => typeof id === 'number' && !Number.isSafeInteger(id)), JSON.stringify(rows));
  // The number is sent back as its shortest decimal, String(id): that is the
  // ID itself for about one ID in 256, and another number for the rest. A
  // lookup by one of those finds no row, or the row of another ID issued
  // in the same millisecond, never its own.
  const rounded = rows.filter(({ id, exact }) => String(id) !== exact);
  assert.ok(rounded.length > 0, `some of ${JSON.stringify(rows)} should have been rounded`);
  for (const { id, exact } of rounded) {
    const found = await db.select({ exact: exactId }).from(customers).where(eq(customers.id, id));
    assert.ok(!found.some((row) => row.exact === exact), `a lookup by ${id} (rounded from ${exact}) found it`);
  }
  await db.$client.end();
});
