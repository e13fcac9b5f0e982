// Prisma ORM 7 (npm), through its node-postgres driver adapter: the recipe of
// doc/clients.md, with the client test/clients/run.sh generated from
// prisma/schema.prisma (prisma generate, offline, JavaScript: Debian's Node.js
// is built without TypeScript, which Prisma 7's default generator writes), and its traps: a BigInt
// field is a JavaScript BigInt, which JSON.stringify refuses, and the
// conversions to Number that get around that round IDs.
// The tables are made by test/clients/schema.sql: prisma migrate and db push
// need Prisma's schema engine, a binary its CLI downloads, which this
// machine cannot fetch.
import test from 'node:test';
import assert from 'node:assert/strict';
import checks from './checks.js';

const { assertExact, assertDecodes, runSchema } = checks;
await runSchema();

// The recipe, as a module of an application would run it.
// guide: begin prisma
import { PrismaClient } from '@prisma/client';
import { PrismaPg } from '@prisma/adapter-pg';

const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL }) });

const ada = await prisma.customer.create({
  data: { name: 'Ada', orders: { create: { item: 'book' } } },
}); // ada.id: a BigInt, 2125...n, exact
const bulk = await prisma.customer.createManyAndReturn({
  data: [{ name: 'Grace' }, { name: 'Edsger' }, { name: 'Barbara' }], select: { id: true },
});

const found = await prisma.customer.findUniqueOrThrow({ where: { id: ada.id }, include: { orders: true } });
// JSON.stringify(found) throws (Do not know how to serialize a BigInt): write BigInts as strings
const body = JSON.stringify(found, (key, value) => (typeof value === 'bigint' ? value.toString() : value));
const again = await prisma.customer.findUnique({ where: { id: BigInt(JSON.parse(body).id) } }); // back from JSON
// guide: end

test('prisma: the recipe', async () => {
  assert.equal(typeof ada.id, 'bigint');
  const bulkIds = bulk.map((customer) => customer.id.toString());
  await assertExact('customers', [ada.id.toString()]);
  await assertExact('customers', bulkIds);
  assert.equal(bulkIds.length, 3);
  await assertDecodes(ada.id.toString());
  assert.equal(found.orders.length, 1);
  const [order] = found.orders;
  assert.deepEqual([order.item, order.customerId], ['book', ada.id]);
  await assertExact('orders', [order.id.toString()]);
  const parsed = JSON.parse(body);
  assert.deepEqual([parsed.id, parsed.orders[0].id], [ada.id.toString(), order.id.toString()]);
  assert.equal(again.name, 'Ada');
  assert.throws(() => JSON.stringify(found), /BigInt/);
});

test('prisma: Number() of a BigInt ID rounds it, and a lookup by it misses its row', async () => {
  const customers = await prisma.customer.createManyAndReturn({
    data: Array.from({ length: 100 }, () => ({ name: 'Ada' })), select: { id: true },
  });
  // Number(id) is the double nearest the ID (a multiple of 256 here), which
  // the adapter sends as its shortest decimal (String(Number(id))): that
  // decimal is the ID itself for about one ID in 256 (a lookup by it finds
  // its row), and another number for the rest, the IDs that are rounded.
  const rounded = customers.filter(({ id }) => String(Number(id)) !== id.toString());
  assert.ok(rounded.length > 0, 'some of the IDs should have been rounded');
  for (const { id } of rounded) {
    // guide: begin prisma-trap
    const customer = await prisma.customer.findUnique({ where: { id: Number(id) } }); // rounds above 2^53
    // guide: end
    assert.ok(customer === null || customer.id !== id, `a lookup by Number(${id}) found it`);
  }
  try {
    BigInt.prototype.toJSON = function () { return Number(this); }; // the global fix that rounds
    const { id } = rounded[0];
    assert.notEqual(JSON.parse(JSON.stringify({ id })).id.toString(), id.toString());
  } finally {
    delete BigInt.prototype.toJSON;
  }
  await prisma.$disconnect();
});
