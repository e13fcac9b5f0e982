# ActiveRecord (Debian's ruby-activerecord and ruby-pg): the recipe of
# doc/clients.md, a migration to the models, run by minitest.
require "active_record"
require "json"
require "time"
require "fileutils"
require "minitest/autorun"

ActiveRecord::Base.establish_connection(ENV.fetch("DATABASE_URL"))
ActiveRecord::Migration.verbose = false

# guide: begin activerecord-migration
class CreateShop < ActiveRecord::Migration[6.1]
  def change
    enable_extension "snowflake"
    create_table :customers, id: :bigint, default: -> { "snowflake_nextval()" } do |t|
      t.text :name, null: false
    end
    create_table :orders, id: :bigint, default: -> { "snowflake_nextval()" } do |t|
      t.references :customer, null: false, foreign_key: true # a bigint column
      t.text :item, null: false
    end
  end
end
# guide: end

# guide: begin activerecord-models
class Customer < ActiveRecord::Base
  has_many :orders

  # JSON for JavaScript: the id as a string (see "JSON" in this guide)
  def as_json(options = nil)
    super.merge("id" => id.to_s)
  end
end

class Order < ActiveRecord::Base
  belongs_to :customer
end
# guide: end

CreateShop.migrate(:up)

class ActiveRecordRecipe < Minitest::Test
  def held(ids)
    list = ids.map { |id| ActiveRecord::Base.connection.quote(id.to_s) }.join(", ")
    ActiveRecord::Base.connection.select_values("SELECT id::text FROM customers WHERE id::text IN (#{list})").sort
  end

  def test_recipe
    # guide: begin activerecord
    ada = Customer.create!(name: "Ada") # ada.id: the snowflake ID, by RETURNING
    ada.orders.create!(item: "book")
    bulk_ids = Customer.insert_all!(
      [{ name: "Grace" }, { name: "Edsger" }, { name: "Barbara" }], returning: [:id]
    ).rows.flatten
    decoded = Customer.connection.select_one(
      Customer.sanitize_sql(["SELECT * FROM snowflake_decode(?)", ada.id])
    )
    # guide: end
    assert_kind_of Integer, ada.id
    assert_equal [ada.id.to_s], held([ada.id])
    assert_equal 3, bulk_ids.uniq.size
    bulk_ids.each { |id| assert_kind_of Integer, id }
    assert_equal bulk_ids.map(&:to_s).sort, held(bulk_ids)
    assert_equal "book", Customer.find(ada.id).orders.first.item
    assert_equal [ENV.fetch("SNOWFLAKE_DATACENTER_ID").to_i, ENV.fetch("SNOWFLAKE_WORKER_ID").to_i],
                 [decoded["datacenter_id"], decoded["worker_id"]]
    assert_in_delta Time.now.to_f, Time.parse(decoded["ts"].to_s).to_f, 300

    # How Ruby writes the ID in JSON, for the layer's JSON test in node.
    json_dir = File.expand_path("../../../build/clients/json", __dir__)
    FileUtils.mkdir_p(json_dir)
    File.write(File.join(json_dir, "ruby.json"), JSON.generate(
      "exact" => held([ada.id]).first,
      "forms" => { "default" => JSON.generate("id" => ada.id), "safe" => ada.to_json }
    ))
  end

  # The JSON option doc/clients.md declines: with a key type of its own,
  # to_json writes a string, but ActiveRecord treats the key as a String.
  def test_a_type_of_its_own_is_a_string
    ActiveRecord::Base.connection.execute(File.read(File.expand_path("../json_type_probe.sql", __dir__)))
    probe = Class.new(ActiveRecord::Base) { self.table_name = "probe" }
    assert_kind_of String, probe.first.id
  end

  def test_schema_dump_keeps_the_default
    dump = StringIO.new
    # The dumper takes the connection pool from ActiveRecord 7.2 on.
    source = ActiveRecord.version >= Gem::Version.new("7.2") ? ActiveRecord::Base.connection_pool : ActiveRecord::Base.connection
    ActiveRecord::SchemaDumper.dump(source, dump)
    assert_match(/create_table "customers", id: :bigint, default: -> \{ "snowflake_nextval\(\)" \}/, dump.string)
  end
end
