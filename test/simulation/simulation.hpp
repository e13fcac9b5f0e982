// The World: the simulation's state and its steps (world.cpp, messages.cpp), faults
// (faults.cpp).
#pragma once

#include <queue>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "world.hpp"

namespace snowflake::sim {

// True time starts here (µs since 1970: 2027-01-15), the registry's clock.
constexpr int64_t kStartUs = 1800000000LL * 1000000;

class World {
 public:
  explicit World(const Config& config);
  Figures run();

 private:
  Node& add_node(int configured, const std::string& system, int64_t timeline,
                 const std::string& host);
  void schedule(int64_t delay_us, EventKind kind, int node, int backend, uint64_t incarnation,
                int64_t a);
  int64_t wall_ms(const Node& node) const;
  int64_t mono(const Node& node) const;
  bool reachable(const Node& node) const;
  int64_t network_delay(Node& node);
  bool begin_request(Node& node, Message* message);
  void post(Node& node, const Message& message, EventKind kind);
  void reply(Node& node, EventKind kind, uint64_t incarnation, size_t index);
  int64_t step_delay(Node& node);
  void start(Node& node);
  void stop(Node& node);
  void backend_check(Node& node, int b);
  void backend_reserve(Node& node, int b);
  void reserved(Node& node, int b, const Backend& run);
  void backend_cas(Node& node, int b);
  void durable_done(Node& node, int b, int64_t until);
  void backend_confirm(Node& node, int b);
  void emit(const Node& node, const Backend& backend);
  registry_round::Settings round_settings(const Node& node) const;
  void worker_step(Node& node, const registry_round::Event& event);
  void worker_answer(Node& node, const registry_round::Answer& answer);
  void worker_tick(Node& node);
  void send_claim(Node& node, const registry_round::Request& request);
  void send_pick(Node& node, const registry_round::Request& request);
  void send_release(Node& node, const registry_round::Request& request);
  void worker_deadline(Node& node, uint64_t request);
  void registry_claim(size_t index);
  void registry_pick(size_t index);
  void worker_picked(Node& node, size_t index);
  void worker_reply(Node& node, size_t index);
  void release(Node& node);
  void registry_release(size_t index);
  void operator_bound(Node& node, int64_t bound);
  void check_done(Node& node);
  void adopt(Node& node, int64_t given);
  bound::Written written(const Node& node) const;
  void write_bound(Node& node, int64_t until);
  void consult_origin(Node& node);
  void establish_origin(Node& node);
  void stale_state(Node& node);
  void created(Node& node, bound::Creation creation);
  void drop_create(Node& node);
  void upgrade(Node& node);
  void new_server(Node& node);
  bool carry(Node& node, int b);
  void dump_restore(Node& node);
  void restore_dump(Node& node);
  int64_t node_field(const Node& node) const;
  // How far a node's wall clock starts from the registry's (either way).
  int64_t wall_spread_us() const { return config_.clocks_in_step ? lease_us_ / 20 : 1000000; }
  void note(const std::string& what);
  void dispatch(const Event& event);
  void schedule_fault();
  void inject_fault();

  Config config_;
  Rng rng_;
  Layout layout_;
  int64_t lease_us_;
  int64_t max_lead_ms_ = 0;
  int64_t now_ = 0;  // true time since the start, µs
  uint64_t sequence_ = 0;
  uint64_t requests_ = 0;
  int64_t outage_until_ = 0;
  int64_t outage_draws_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<int> active_;              // nodes faults may hit (not zombies)
  std::vector<registry_row::Row> rows_;  // by node field: (datacenter_id, worker_id)
  // The registry's identity: its timeline moves at a failover that loses
  // commits, its table's OID when the table is made again.
  registry_history::Identity registry_{1, 1, 1};
  // --registry-loses-commits: the rows as the registry's asynchronous standby
  // has them, every 100 ms of the last lease (oldest first).
  std::deque<std::pair<int64_t, std::vector<registry_row::Row>>> snapshots_;
  automatic::Range range_;  // the identities automatic nodes pick from
  std::vector<automatic::Row> pick_rows_;
  std::vector<Message> messages_;
  std::vector<std::pair<int64_t, int>> issued_;  // (ID, node)
  Figures figures_;
};

}  // namespace snowflake::sim
