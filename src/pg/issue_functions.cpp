// SQL functions that issue IDs: snowflake_nextval(), snowflake_generate(n),
// and snowflake_lastval(), the session's most recently returned ID, which
// DISCARD forgets as it forgets lastval(), by a utility hook.
#include "issue_functions.hpp"

#include "boundary.hpp"
#include "issue.hpp"

namespace snowflake::pg {
namespace {

// snowflake_generate(n) returns at most this many IDs per call.
constexpr int32 kMaxGenerate = 10000000;

// The ID most recently returned to this session (-1: none yet, or none since
// a DISCARD). IDs issued in parallel workers are theirs, not the session's, as
// with lastval().
int64_t last_returned = -1;
// Whether a DISCARD forgot last_returned, so that snowflake_lastval() says so.
bool discarded = false;

ProcessUtility_hook_type previous_process_utility = nullptr;

// DISCARD SEQUENCES and DISCARD ALL make lastval() undefined again; they do
// the same to snowflake_lastval(), once the command has succeeded (DISCARD
// ALL inside a transaction block fails first). Poolers depend on it: in
// session pooling pgbouncer runs DISCARD ALL before it hands a server
// connection to another client, who must not read the last one's ID. Like
// PostgreSQL's own reset, this is not undone if the transaction of a DISCARD
// SEQUENCES rolls back. Only plain values live in this frame: the command
// may raise an error.

void process_utility(PlannedStmt* statement, const char* query, bool read_only_tree,
                     ProcessUtilityContext context, ParamListInfo params,
                     QueryEnvironment* query_env, DestReceiver* dest, QueryCompletion* completion) {
  Node* command = statement->utilityStmt;
  const bool forgets =
      IsA(command, DiscardStmt) && (castNode(DiscardStmt, command)->target == DISCARD_ALL ||
                                    castNode(DiscardStmt, command)->target == DISCARD_SEQUENCES);
  if (previous_process_utility != nullptr) {
    previous_process_utility(statement, query, read_only_tree, context, params, query_env, dest,
                             completion);
  } else {
    standard_ProcessUtility(statement, query, read_only_tree, context, params, query_env, dest,
                            completion);
  }
  if (forgets) {
    discarded = discarded || last_returned >= 0;
    last_returned = -1;
  }
}

// Where snowflake_generate(n) is between calls: the reserved run it is
// returning, and how many IDs are still to come.
struct GenerateState {
  int64_t next_id;
  int64_t step;
  int64_t left_in_run;
  int64_t left_in_total;
};

}  // namespace

void install_utility_hook() {
  previous_process_utility = ProcessUtility_hook;
  ProcessUtility_hook = process_utility;
}

}  // namespace snowflake::pg

using namespace snowflake::pg;

SNOWFLAKE_FUNCTION(snowflake_nextval) {
  last_returned = issue(1).first_id;
  discarded = false;
  PG_RETURN_INT64(last_returned);
}

SNOWFLAKE_FUNCTION(snowflake_lastval) {
  if (last_returned < 0) {
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("snowflake_lastval is not yet defined in this session"),
                    discarded ? errdetail("DISCARD discarded the session's state, the last "
                                          "snowflake ID returned to it included.")
                              : errdetail("No snowflake ID has been returned in this session yet."),
                    errhint("Call snowflake_nextval() or snowflake_generate(n) first.")));
  }
  PG_RETURN_INT64(last_returned);
}

// Returns n IDs, strictly increasing. Each step reserves, with one
// compare-and-swap, as many as the current unit of time holds (up to 4,096 in
// the default layout), so n IDs cost about n / 4,096 steps; IDs are reserved
// only as the caller asks for them, so a LIMIT wastes at most one run.
SNOWFLAKE_FUNCTION(snowflake_generate) {
  FuncCallContext* call;
  if (SRF_IS_FIRSTCALL()) {
    const int32 wanted = PG_GETARG_INT32(0);
    if (wanted < 1 || wanted > kMaxGenerate) {
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("snowflake_generate() cannot return %d IDs", wanted),
                      errdetail("n must be between 1 and %d.", kMaxGenerate),
                      wanted < 1 ? errhint("Pass the number of IDs wanted, 1 or more; for none, "
                                           "skip the call.")
                                 : errhint("Call it several times for more IDs.")));
    }
    call = SRF_FIRSTCALL_INIT();
    auto* state = static_cast<GenerateState*>(
        MemoryContextAllocZero(call->multi_call_memory_ctx, sizeof(GenerateState)));
    state->left_in_total = wanted;
    call->user_fctx = state;
  }
  call = SRF_PERCALL_SETUP();
  auto* state = static_cast<GenerateState*>(call->user_fctx);
  if (state->left_in_total == 0) SRF_RETURN_DONE(call);
  if (state->left_in_run == 0) {
    const IssuedRun run = issue(state->left_in_total);
    state->next_id = run.first_id;
    state->step = run.step;
    state->left_in_run = run.count;
  }
  last_returned = state->next_id;
  discarded = false;
  state->next_id += state->step;
  state->left_in_run--;
  state->left_in_total--;
  SRF_RETURN_NEXT(call, Int64GetDatum(last_returned));
}
