// Sequelize (npm): the recipe of doc/clients.md.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { assertExact, assertDecodes } = require('./checks');

test('sequelize: the recipe', async () => {
  // guide: begin sequelize
  const { Sequelize, DataTypes } = require('sequelize');
  const sequelize = new Sequelize(process.env.DATABASE_URL, { logging: false });
  const snowflakeKey = {
    type: DataTypes.BIGINT, // comes back as a string: exact
    primaryKey: true,
    defaultValue: Sequelize.literal('snowflake_nextval()'),
  };

  const Customer = sequelize.define('Customer', {
    id: snowflakeKey,
    name: { type: DataTypes.TEXT, allowNull: false },
  }, { tableName: 'customers', timestamps: false });
  const Order = sequelize.define('Order', {
    id: snowflakeKey,
    item: { type: DataTypes.TEXT, allowNull: false },
  }, { tableName: 'orders', timestamps: false });
  Customer.hasMany(Order, { foreignKey: { name: 'customer_id', allowNull: false } });
  Order.belongsTo(Customer, { foreignKey: 'customer_id' });
  await sequelize.sync();

  const ada = await Customer.create({ name: 'Ada' }); // ada.id: the snowflake ID
  await Order.create({ customer_id: ada.id, item: 'book' });
  const bulk = await Customer.bulkCreate(
    [{ name: 'Grace' }, { name: 'Edsger' }, { name: 'Barbara' }], { returning: ['id'] });
  // guide: end
  const bulkIds = bulk.map((customer) => customer.id);
  await assertExact('customers', [ada.id]);
  await assertExact('customers', bulkIds);
  assert.equal(bulkIds.length, 3);
  await assertDecodes(ada.id);
  const loaded = await Customer.findByPk(ada.id, { include: Order });
  assert.equal(loaded.Orders[0].item, 'book');
  assert.equal(loaded.Orders[0].customer_id, ada.id);
  await sequelize.close();
});
