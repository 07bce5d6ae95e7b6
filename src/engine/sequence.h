// A sequence: one request's state inside the engine (tokens, KV blocks, progress, timings).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/channel.h"
#include "engine/kv_key.h"
#include "engine/reply_rules.h"
#include "engine/request.h"

namespace tf::engine {

struct KvLoad;

enum class SeqState { kWaiting, kRunning, kFinished };

struct Sequence {
  Request req;
  std::shared_ptr<Channel> channel;
  uint64_t arrival = 0;  // admission order; the newest running sequence is preempted
  SeqState state = SeqState::kWaiting;
  std::vector<int32_t> tokens;  // prompt then generated tokens
  int64_t prompt_len = 0;
  int64_t computed = 0;               // tokens whose K/V are in the cache
  int64_t cached_tokens = -1;         // prompt tokens served from the prefix cache (-1: not yet)
  int cache_tier = 0;                 // the lowest tier they came from (0 pool, 1 RAM, 2 disk)
  int64_t cache_inserted = 0;         // whole blocks already recorded in the prefix index
  BlockKey cache_root;                // the chain's root: the model and cache_salt
  BlockKey cache_chain;               // key of block cache_inserted - 1 (cache_root at 0)
  std::vector<int32_t> blocks;        // block table, kept by the KV cache manager
  std::shared_ptr<KvLoad> load;       // blocks coming back from disk (the loading state)
  std::vector<BlockKey> staged;       // loaded blocks held in RAM until the sequence is admitted
  std::unique_ptr<ReplyRules> rules;  // the reply's grammar and reasoning; null: none asked
  bool cancelled = false;
  bool in_flight = false;  // a row of a queued overlapped step: kept alive until it is read
  bool prefilled_sent = false;
  Tokens prompt_scores;  // Prefilled::prompt, filled by position as the prompt's chunks run
  int64_t preemptions = 0;
  // This step's drafts, run after the last token and verified before any joins `tokens`.
  std::vector<int32_t> drafts;
  int64_t accepted_drafts = 0, rejected_drafts = 0;
  Clock::time_point submitted{}, first_scheduled{}, first_token{};
  bool scheduled_once = false;

  int64_t generated() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
  // Tokens still to run through the model before the next token can be sampled.
  int64_t pending() const { return static_cast<int64_t>(tokens.size()) - computed; }
  // The prompt is being scored (Request::prompt_logprobs): its positions bring logits rows to the
  // host until the scores went out with Prefilled.
  bool scoring_prompt() const { return req.prompt_logprobs >= 0 && !prefilled_sent; }
};

}  // namespace tf::engine
