// knex (npm): the recipe of doc/clients.md.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { assertExact, assertDecodes } = require('./checks');

test('knex: the recipe', async () => {
  // guide: begin knex
  const knex = require('knex')({ client: 'pg', connection: process.env.DATABASE_URL });

  await knex.schema.createTable('customers', (table) => {
    table.bigInteger('id').primary().defaultTo(knex.raw('snowflake_nextval()'));
    table.text('name').notNullable();
  });
  await knex.schema.createTable('orders', (table) => {
    table.bigInteger('id').primary().defaultTo(knex.raw('snowflake_nextval()'));
    table.bigInteger('customer_id').notNullable().references('customers.id');
    table.text('item').notNullable();
  });

  const [{ id: customerId }] = await knex('customers').insert({ name: 'Ada' }, ['id']);
  await knex('orders').insert({ customer_id: customerId, item: 'book' });
  const bulkIds = (await knex('customers').insert(
    [{ name: 'Grace' }, { name: 'Edsger' }, { name: 'Barbara' }], ['id'])).map((row) => row.id);
  // guide: end
  await assertExact('customers', [customerId]);
  await assertExact('customers', bulkIds);
  assert.equal(bulkIds.length, 3);
  await assertDecodes(customerId);
  const order = await knex('orders').join('customers', 'customers.id', 'orders.customer_id')
    .where('customers.id', customerId).first('orders.item');
  assert.equal(order.item, 'book');
  await knex.destroy();
});
