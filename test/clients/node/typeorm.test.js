// TypeORM (npm), with entity schemas (no decorators, no TypeScript): the
// recipe of doc/clients.md.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { assertExact, assertDecodes } = require('./checks');

// TypeORM 1.1 needs Node.js 20.19 or later (bookworm's own nodejs is 18).
const [major, minor] = process.versions.node.split('.').map(Number);
const tooOld = (major < 20 || (major === 20 && minor < 19)) && `TypeORM 1.1 needs Node.js 20.19, this is ${process.version}`;

test('typeorm: the recipe', { skip: tooOld }, async () => {
  // guide: begin typeorm
  require('reflect-metadata');
  const { DataSource, EntitySchema } = require('typeorm');
  const snowflakeKey = { type: 'bigint', primary: true, default: () => 'snowflake_nextval()' };

  const Customer = new EntitySchema({
    name: 'Customer',
    tableName: 'customers',
    columns: { id: snowflakeKey, name: { type: 'text' } },
    relations: { orders: { type: 'one-to-many', target: 'Order', inverseSide: 'customer' } },
  });
  const Order = new EntitySchema({
    name: 'Order',
    tableName: 'orders',
    columns: { id: snowflakeKey, item: { type: 'text' } },
    relations: {
      customer: { type: 'many-to-one', target: 'Customer', joinColumn: { name: 'customer_id' }, nullable: false },
    },
  });

  const dataSource = new DataSource({
    type: 'postgres', url: process.env.DATABASE_URL, entities: [Customer, Order], synchronize: true,
  });
  await dataSource.initialize();
  const customers = dataSource.getRepository('Customer');
  const orders = dataSource.getRepository('Order');

  const ada = await customers.save({ name: 'Ada' }); // ada.id: the snowflake ID, a string
  await orders.save({ customer: ada, item: 'book' });
  const bulk = await customers.save([{ name: 'Grace' }, { name: 'Edsger' }, { name: 'Barbara' }]);
  // guide: end
  const bulkIds = bulk.map((customer) => customer.id);
  await assertExact('customers', [ada.id]);
  await assertExact('customers', bulkIds);
  assert.equal(bulkIds.length, 3);
  await assertDecodes(ada.id);
  const loaded = await customers.findOne({ where: { id: ada.id }, relations: { orders: true } });
  assert.equal(loaded.orders[0].item, 'book');
  await dataSource.destroy();
});
