"""The data contract (docs/architecture.md §3): every table of the source, staging and reflective stores.

Three stores per corpus, each its own database so they can live on different engines and have their own
retention: `source` (the original text, never edited), `staging` (the pipeline's intermediate and derived
state) and `reflective` (user reactions, purgeable on its own). Tables are SQLAlchemy Core so the same
contract runs on SQLite (default) and Postgres. All times are UTC.
"""

from __future__ import annotations

import uuid

from sqlalchemy import (
    DDL,
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    event,
)

source_metadata = MetaData()
staging_metadata = MetaData()
reflective_metadata = MetaData()

ID = String(64)


# --------------------------------------------------------------------------------------------- source
ingest_files = Table(
    "ingest_files",
    source_metadata,
    Column("file_id", Integer, primary_key=True, autoincrement=True),
    Column("corpus", String(200), nullable=False),
    Column("path", Text, nullable=False),
    Column("source_format", String(32), nullable=False),
    Column("file_sha256", String(64), nullable=False),
    Column("records_in", Integer, nullable=False),
    Column("stored", Integer, nullable=False),
    Column("unchanged", Integer, nullable=False),
    Column("dead_lettered", Integer, nullable=False),
    Column("conversations_in", Integer, nullable=False),
    Column("conversations_changed", Integer, nullable=False),
    Column("started_at", DateTime, nullable=False),
    Column("finished_at", DateTime, nullable=False),
    # records of the export's structure (ChatGPT hidden system nodes): neither stored nor dead letters
    Column("structural", Integer, nullable=True),
    # the census's count of the file's records, independent of the parser (the accounting check's truth)
    Column("records_counted", Integer, nullable=True),
)

conversations = Table(
    "conversations",
    source_metadata,
    Column("conversation_id", ID, primary_key=True),
    Column("corpus", String(200), nullable=False),
    Column("source_ref", Text, nullable=False),  # the conversation's own id in its input
    Column("title", Text, nullable=False),
    Column("created_at", DateTime, nullable=False),
    Column("source_format", String(32), nullable=False),
    Column("source_sha256", String(64), nullable=False),  # content hash: unchanged => skipped
    Column("message_count", Integer, nullable=False),
    Column("attributes", JSON, nullable=False),
    Column("ingested_at", DateTime, nullable=False),
    UniqueConstraint("corpus", "source_ref", name="uq_conversation_source_ref"),
)

messages = Table(
    "messages",
    source_metadata,
    Column("message_id", ID, primary_key=True),
    Column("conversation_id", ID, ForeignKey("conversations.conversation_id"), nullable=False),
    # parent in the source's reply tree (ChatGPT mapping) or the previous turn; NULL only for a root
    Column("parent_id", ID, ForeignKey("messages.message_id"), nullable=True),
    Column("role", String(16), nullable=False),  # user | assistant | system | tool
    Column("author", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("created_at", DateTime, nullable=False),
    # True when the source gave no per-message time: session/conversation time + order-preserving offset
    Column("time_derived", Boolean, nullable=False),
    Column("position", Integer, nullable=False),  # order within the conversation (active branch first)
    Column("content_sha256", String(64), nullable=False),
    Column("source_ref", Text, nullable=False),  # the record's own id in its input (dia_id, node id, ...)
    # source attributes (LongMemEval has_answer, LoCoMo image caption, ChatGPT branch): never features
    Column("attributes", JSON, nullable=False),
    UniqueConstraint("conversation_id", "source_ref", name="uq_message_source_ref"),
)
Index("ix_messages_conversation_position", messages.c.conversation_id, messages.c.position)
Index("ix_messages_created_at", messages.c.created_at)

# Prior versions of a message whose source text changed: the original is never lost.
message_revisions = Table(
    "message_revisions",
    source_metadata,
    Column("revision_id", Integer, primary_key=True, autoincrement=True),
    Column("message_id", ID, nullable=False, index=True),
    Column("text", Text, nullable=False),
    Column("content_sha256", String(64), nullable=False),
    Column("superseded_at", DateTime, nullable=False),
)

dead_letters = Table(
    "dead_letters",
    source_metadata,
    Column("dead_letter_id", Integer, primary_key=True, autoincrement=True),
    Column("corpus", String(200), nullable=False),
    Column("file_sha256", String(64), nullable=False),
    Column("source_ref", Text, nullable=False),
    Column("reason_code", String(48), nullable=False),
    Column("reason", Text, nullable=False),
    Column("payload_excerpt", Text, nullable=False),
    Column("recorded_at", DateTime, nullable=False),
)
# one row per dead record (no uniqueness: a record repeated in the input is dead as often as it repeats)
Index("ix_dead_letters_reason", dead_letters.c.reason_code)
Index("ix_dead_letters_file", dead_letters.c.file_sha256)

# --------------------------------------------------------------------------------------------- staging
segments = Table(
    "segments",
    staging_metadata,
    Column("segment_id", ID, primary_key=True),
    Column("conversation_id", ID, nullable=False),
    Column("position", Integer, nullable=False),  # order within the conversation
    Column("message_ids", JSON, nullable=False),  # ordered
    # where the segment starts in its first message and ends (exclusive) in its last one
    Column("start_char", Integer, nullable=False),
    Column("end_char", Integer, nullable=False),
    # [{message_id, start, end, offset}]: message char span -> offset of that piece in `text`
    Column("message_spans", JSON, nullable=False),
    Column("text", Text, nullable=False),
    Column("token_estimate", Integer, nullable=False),
    Column("created_at", DateTime, nullable=False),
    Column("conversation_sha256", String(64), nullable=False),  # the source version it was cut from
    # set when the source changed and a re-cut no longer produces this segment; never deleted
    Column("superseded_at", DateTime, nullable=True),
)
Index("ix_segments_conversation", segments.c.conversation_id, segments.c.position)

# Incremental bookkeeping: a conversation version (content hash) a stage has finished with.
stage_progress = Table(
    "stage_progress",
    staging_metadata,
    Column("stage", String(32), primary_key=True),
    Column("conversation_id", ID, primary_key=True),
    Column("conversation_sha256", String(64), nullable=False),
    Column("stats", JSON, nullable=False),
    Column("finished_at", DateTime, nullable=False),
)

mentions = Table(
    "mentions",
    staging_metadata,
    Column("mention_id", ID, primary_key=True),
    Column("segment_id", ID, ForeignKey("segments.segment_id"), nullable=False),
    Column("message_id", ID, nullable=False),
    Column("conversation_id", ID, nullable=False),
    Column("span_start", Integer, nullable=False),  # char offsets in the message text
    Column("span_end", Integer, nullable=False),
    Column("surface", Text, nullable=False),  # message.text[span_start:span_end], verified
    Column("title", Text, nullable=False),
    Column("type", String(32), nullable=False),
    Column("description", Text, nullable=False),
    Column("aliases", JSON, nullable=False),
    Column("relations", JSON, nullable=False),  # [{target_title, relation, confidence}]
    Column("confidence", Float, nullable=False),
    Column("consolidated_id", ID, nullable=True),  # hard link to canonical_concepts, set by the loop
    Column("extractor", String(100), nullable=False),
    Column("extracted_at", DateTime, nullable=False),
    Column("message_created_at", DateTime, nullable=False),
    # [ClaimCandidate]: the revisable facts the teacher says the mention states (NULL: extracted before claims)
    Column("claims", JSON, nullable=True),
)
Index("ix_mentions_segment", mentions.c.segment_id)
Index("ix_mentions_message", mentions.c.message_id)
Index("ix_mentions_consolidated", mentions.c.consolidated_id)

# Which segments a teacher has answered (one row per segment and extractor): a changed conversation
# re-cut into mostly the same segments re-extracts only the new ones. status `pending` = a transient LLM
# failure, retried by the next run.
segment_extractions = Table(
    "segment_extractions",
    staging_metadata,
    Column("segment_id", ID, primary_key=True),
    Column("extractor", String(100), primary_key=True),
    Column("conversation_id", ID, nullable=False),
    Column("status", String(16), nullable=False),  # done | pending
    Column("outcome", String(16), nullable=False),  # ok | invalid | refused | error
    Column("reason", Text, nullable=False),
    Column("stats", JSON, nullable=False),  # candidates, accepted, rejected, spans, reactions ...
    Column("extracted_at", DateTime, nullable=False),
)
Index("ix_segment_extractions_conversation", segment_extractions.c.conversation_id)

canonical_concepts = Table(
    "canonical_concepts",
    staging_metadata,
    Column("concept_id", ID, primary_key=True),
    Column("title", Text, nullable=False),
    Column("type", String(32), nullable=False),
    Column("description", Text, nullable=False),
    Column("state", String(16), nullable=False),  # active | weak | merged | split | archived
    Column("trust", String(16), nullable=False),  # stable | weakened | disputed | broken | stale | archived
    Column("confidence", Float, nullable=False),
    Column("aliases", JSON, nullable=False),
    Column("evidence_spans", JSON, nullable=False),
    Column("relations", JSON, nullable=False),
    Column("revision_count", Integer, nullable=False),
    Column("support_count", Integer, nullable=False),
    Column("first_seen", DateTime, nullable=False),
    Column("last_seen", DateTime, nullable=False),
    Column("recorded_at", DateTime, nullable=False),
    Column("merged_into", ID, nullable=True),
)
Index("ix_concepts_state", canonical_concepts.c.state)

# One row per (concept, evidence span): the EVIDENCE_FOR edge, queryable without unpacking JSON.
concept_evidence = Table(
    "concept_evidence",
    staging_metadata,
    Column("concept_id", ID, nullable=False),
    Column("mention_id", ID, nullable=False),
    Column("message_id", ID, nullable=False),
    Column("segment_id", ID, nullable=False),
    Column("span_start", Integer, nullable=False),
    Column("span_end", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("status", String(16), nullable=False),  # active | stale | disputed | rejected
    UniqueConstraint("concept_id", "mention_id", name="uq_concept_evidence"),
)
Index("ix_concept_evidence_message", concept_evidence.c.message_id)
Index("ix_concept_evidence_segment", concept_evidence.c.segment_id)

action_log = Table(
    "action_log",
    staging_metadata,
    Column("action_id", Integer, primary_key=True, autoincrement=True),
    Column(
        "action", String(24), nullable=False
    ),  # create|attach|refine|reject|merge|split|archive|invalidate|repair|...
    Column("actor", String(48), nullable=False),  # memory_loop | gardener | repair_worker | user
    Column("concept_id", ID, nullable=True),
    Column("mention_id", ID, nullable=True),
    Column("scores", JSON, nullable=False),
    Column("rationale", Text, nullable=False),
    Column("cited_message_ids", JSON, nullable=False),
    Column("prior_state", JSON, nullable=True),  # the row before the action (for replay and rollback)
    Column("new_state", JSON, nullable=True),
    Column("run_id", String(64), nullable=False),
    Column("recorded_at", DateTime, nullable=False),
)
Index("ix_action_log_concept", action_log.c.concept_id)
Index("ix_action_log_mention", action_log.c.mention_id)
# Append-only, enforced by the database itself (SQLite and Postgres): corrections are new rows.
for _op in ("UPDATE", "DELETE"):
    event.listen(
        action_log,
        "after_create",
        DDL(
            f"CREATE TRIGGER IF NOT EXISTS action_log_no_{_op.lower()} BEFORE {_op} ON action_log "
            "BEGIN SELECT RAISE(ABORT, 'action_log is append-only'); END"
        ).execute_if(dialect="sqlite"),
    )
event.listen(
    action_log,
    "after_create",
    DDL(
        "CREATE OR REPLACE FUNCTION action_log_append_only() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'action_log is append-only'; END $$"
    ).execute_if(dialect="postgresql"),
)
event.listen(  # a statement trigger: TRUNCATE too, and one check per statement, not per row
    action_log,
    "after_create",
    DDL(
        "CREATE OR REPLACE TRIGGER action_log_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON action_log "
        "FOR EACH STATEMENT EXECUTE FUNCTION action_log_append_only()"
    ).execute_if(dialect="postgresql"),
)

# Concept rows behind the ActionLog: the memory loop writes a row holding many spans only once its evidence
# doubled (memory_loop/apply.py), so until then the row lags its log rows and `concept_evidence`. The id is
# here from the transaction that logged the first unwritten change to the one that writes the row; a run
# that died leaves it, and every concept writer rebuilds those rows first (concepts/rows_behind.py).
concept_rows_behind = Table(
    "concept_rows_behind",
    staging_metadata,
    Column("concept_id", ID, primary_key=True),
)

residuals = Table(
    "residuals",
    staging_metadata,
    Column("residual_id", Integer, primary_key=True, autoincrement=True),
    Column("stage", String(32), nullable=False),  # extraction | memory_loop | ...
    Column("segment_id", ID, nullable=True),
    Column("message_id", ID, nullable=True),
    Column("mention_id", ID, nullable=True),
    Column("reason_code", String(48), nullable=False),
    Column("reason", Text, nullable=False),
    Column("payload", JSON, nullable=False),
    Column("recorded_at", DateTime, nullable=False),
)
Index("ix_residuals_stage", residuals.c.stage, residuals.c.reason_code)
Index("ix_residuals_mention", residuals.c.mention_id)
# a stage's residuals of given mentions (the loop's pending look, its held-residual drops, a teacher switch's
# retirements): without it SQLite walks every residual of the stage per mention (70 s of a 100k-message build)
Index("ix_residuals_stage_mention", residuals.c.stage, residuals.c.mention_id)

topics = Table(
    "topics",
    staging_metadata,
    Column("topic_id", ID, primary_key=True),
    Column("label", Text, nullable=False),
    Column("profile", Text, nullable=False),
    Column("keywords", JSON, nullable=False),
    Column("centroid", JSON, nullable=False),
    Column("size", Integer, nullable=False),
    Column("silhouette", Float, nullable=True),
    Column("label_centroid_distance", Float, nullable=True),
    Column("domain_id", ID, nullable=True),
    Column("anchor_id", ID, nullable=True),
    Column("first_seen", DateTime, nullable=True),
    Column("last_seen", DateTime, nullable=True),
    Column("recorded_at", DateTime, nullable=False),
    Column("label_source", String(160), nullable=True),  # c-tf-idf | llm:<model>/<prompt id>
    Column("representative_segment_ids", JSON, nullable=True),  # members nearest the centroid, nearest first
    Column("conversation_count", Integer, nullable=True),
)

topic_segments = Table(  # Segment BELONGS_TO Topic
    "topic_segments",
    staging_metadata,
    Column("segment_id", ID, primary_key=True),
    Column("topic_id", ID, nullable=True),  # NULL = noise: still retrievable, just not in a topic
    Column("probability", Float, nullable=False),
    Column("outlier_score", Float, nullable=True),  # HDBSCAN GLOSH score (0 core … 1 outlier)
    # cosine to the own topic's centroid, or for noise to the nearest centroid (nearest_topic_id)
    Column("centroid_similarity", Float, nullable=True),
    Column("nearest_topic_id", ID, nullable=True),  # noise only: the closest topic, for soft entry/DURING
)
Index("ix_topic_segments_topic", topic_segments.c.topic_id)

topic_concept_links = Table(  # Topic RELATED_TO Concept
    "topic_concept_links",
    staging_metadata,
    Column("topic_id", ID, nullable=False),
    Column("concept_id", ID, nullable=False),
    Column("weight", Float, nullable=False),  # 0-100 after min-max normalisation
    Column("cosine", Float, nullable=False),
    UniqueConstraint("topic_id", "concept_id", name="uq_topic_concept"),
)
Index("ix_links_concept", topic_concept_links.c.concept_id)

domains = Table(
    "domains",
    staging_metadata,
    Column("domain_id", ID, primary_key=True),
    Column("label", Text, nullable=False),
    Column("profile", Text, nullable=False),
    Column("size", Integer, nullable=False),  # topics
    Column("recorded_at", DateTime, nullable=False),
    Column("keywords", JSON, nullable=True),
    Column("label_source", String(160), nullable=True),
    Column("segment_count", Integer, nullable=True),
)

anchor_entities = Table(  # Topic BELONGS_TO AnchorEntity BELONGS_TO Domain
    "anchor_entities",
    staging_metadata,
    Column("anchor_id", ID, primary_key=True),
    Column("domain_id", ID, nullable=False),
    # NULL = the domain's general anchor (its topics associated with none of its concepts)
    Column("concept_id", ID, nullable=True),
    Column("label", Text, nullable=False),
    Column("score", Float, nullable=False),
    Column("recorded_at", DateTime, nullable=False),
    Column("topic_count", Integer, nullable=True),  # topics that BELONG_TO it
    Column("linked_topic_count", Integer, nullable=True),  # topics of the domain linked to its concept
)

# One row per build of a topic-layer stage: what it was built from (hashes), the chosen parameters, the
# trial history and the figures. A rerun over the same input and configuration reuses it instead of tuning
# again, which keeps reruns identical even when a time budget cut the first search short.
topic_builds = Table(
    "topic_builds",
    staging_metadata,
    Column("build_id", Integer, primary_key=True, autoincrement=True),
    Column("stage", String(32), nullable=False),  # topics | weighted_links | domains
    Column("input_sha256", String(64), nullable=False),
    Column("config_sha256", String(64), nullable=False),
    Column("config", JSON, nullable=False),
    Column("figures", JSON, nullable=False),
    Column("trials", JSON, nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("recorded_at", DateTime, nullable=False),
)
Index("ix_topic_builds_stage", topic_builds.c.stage, topic_builds.c.build_id)

lifecycle_proposals = Table(
    "lifecycle_proposals",
    staging_metadata,
    Column("proposal_id", ID, primary_key=True),
    Column("category", String(32), nullable=False),  # merge|split|macro_concept|noise
    Column("concept_ids", JSON, nullable=False),
    Column("score", Float, nullable=False),
    Column("rationale", Text, nullable=False),
    Column("cited_message_ids", JSON, nullable=False),
    # pending_review | applied | rejected | rolled_back | stale (no longer proposed, or its concepts changed)
    Column("status", String(24), nullable=False),
    Column("proposer", String(48), nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("created_at", DateTime, nullable=False),
    Column("reviewed_at", DateTime, nullable=True),
    # category details a Phase 1 run needs (merge: pair scores; split: the evidence clusters' mention ids)
    Column("payload", JSON, nullable=True),
    Column("review_note", Text, nullable=True),  # why Phase 1 rejected it / marked it stale
    Column("updated_at", DateTime, nullable=True),  # a later triage run changed its score or citations
)
Index("ix_lifecycle_proposals_status", lifecycle_proposals.c.status, lifecycle_proposals.c.category)

gardener_actions = Table(
    "gardener_actions",
    staging_metadata,
    Column("gardener_action_id", ID, primary_key=True),
    Column("proposal_id", ID, nullable=True),
    Column(
        "action", String(32), nullable=False
    ),  # refine_concept|merge_concepts|split_concept|create_relation|archive_concept
    Column("concept_ids", JSON, nullable=False),
    Column("before_state", JSON, nullable=False),
    Column("after_state", JSON, nullable=False),
    Column("rationale", Text, nullable=False),
    Column("cited_message_ids", JSON, nullable=False),
    Column("dry_run", Boolean, nullable=False),  # False: a dry run writes no rows, only its report file
    Column("status", String(16), nullable=False),  # applied | rolled_back | refused
    Column("run_id", String(64), nullable=False),
    Column("recorded_at", DateTime, nullable=False),
    Column("chooser", String(100), nullable=True),  # rules | llm:<model>
    Column("read_segment_ids", JSON, nullable=True),  # source segments read before deciding (ambiguity)
    Column("scores", JSON, nullable=True),
    Column("error", Text, nullable=True),  # why it was refused or failed
    Column("rolled_back_at", DateTime, nullable=True),
)
Index("ix_gardener_actions_run", gardener_actions.c.run_id)

repair_queue = Table(
    "repair_queue",
    staging_metadata,
    Column("repair_id", Integer, primary_key=True, autoincrement=True),
    Column("concept_id", ID, nullable=False),
    Column("trust", String(16), nullable=False),
    Column("reason", Text, nullable=False),
    Column("status", String(16), nullable=False),  # queued | done | escalated | rolled_back
    Column("enqueued_at", DateTime, nullable=False),
    Column("resolved_at", DateTime, nullable=True),
    # what the repair worker did (reattach|refine|split|merge|archive|rebuild) or why it could not
    Column("action", String(24), nullable=True),
    Column("note", Text, nullable=True),
    Column("run_id", String(64), nullable=True),  # the repair run that resolved it
    Column("cited_claim_ids", JSON, nullable=True),
    Column("cited_message_ids", JSON, nullable=True),
    # snapshots (memory_core.concepts.snapshots) of the concepts the repair touched: rollback writes `before`
    Column("before_state", JSON, nullable=True),
    Column("after_state", JSON, nullable=True),
)
Index("ix_repair_queue_status", repair_queue.c.status, repair_queue.c.concept_id)

# A revisable fact a mention states (memory_core.ontology.claims): subject, slot, value, valid time, status.
claims = Table(
    "claims",
    staging_metadata,
    Column("claim_id", ID, primary_key=True),
    Column("concept_id", ID, nullable=False),  # the mention's concept ("" while it has none)
    Column("message_id", ID, nullable=False),
    Column("text", Text, nullable=False),  # the evidence span, verbatim
    Column(
        "state", String(16), nullable=False
    ),  # the claim's status: active|stale|disputed|rejected|archived
    Column("recorded_at", DateTime, nullable=False),  # system time memory first recorded it
    Column("mention_id", ID, nullable=True),
    Column("segment_id", ID, nullable=True),
    Column("conversation_id", ID, nullable=True),
    Column("subject", Text, nullable=True),  # normalised: the author's key, a name, "<author>'s sister"
    Column("subject_label", Text, nullable=True),
    Column("slot", String(32), nullable=True),
    Column("qualifier", Text, nullable=True),
    Column("attribute", Text, nullable=True),  # slot key: slot[:qualifier], what a history is kept for
    Column("value", Text, nullable=True),
    Column("value_norm", Text, nullable=True),
    Column("polarity", String(16), nullable=True),  # affirmed | negated
    Column("span_start", Integer, nullable=True),
    Column("span_end", Integer, nullable=True),
    Column("valid_from", DateTime, nullable=True),  # valid time: stated in the text, else when it was said
    Column("valid_time_source", String(16), nullable=True),  # stated | utterance
    Column("spoken_at", DateTime, nullable=True),  # the message time
    Column("state_reason", Text, nullable=True),  # why the status is what it is (invalidation, branch ...)
    Column("state_changed_at", DateTime, nullable=True),
    Column("extractor", String(100), nullable=True),
    Column("on_active_branch", Boolean, nullable=True),  # False: an abandoned ChatGPT branch, never current
)
Index("ix_claims_mention", claims.c.mention_id)
Index("ix_claims_subject", claims.c.subject, claims.c.attribute)
Index("ix_claims_message", claims.c.message_id)

# bi-temporal: (Concept)-[:HAS_STATE {valid_from, valid_until}]->(FactState). One row per version of a state:
# a state whose interval or status changes gets a new row (recorded_at = then) and its old row superseded_at.
fact_states = Table(
    "fact_states",
    staging_metadata,
    Column("fact_state_id", ID, primary_key=True),
    Column("concept_id", ID, nullable=False),  # the concept of the claim that opened the state ("" if none)
    Column("attribute", Text, nullable=False),  # the slot key
    Column("value", Text, nullable=False),
    Column("valid_from", DateTime, nullable=False),
    Column("valid_until", DateTime, nullable=True),  # NULL = still true
    Column("recorded_at", DateTime, nullable=False),
    Column("superseded_at", DateTime, nullable=True),  # system time the memory stopped believing this version
    Column("evidence_message_id", ID, nullable=False),  # the message of the opening claim
    Column("state_key", ID, nullable=True),  # the state across its versions
    Column("subject", Text, nullable=True),
    Column("subject_label", Text, nullable=True),
    Column("slot", String(32), nullable=True),
    Column("value_norm", Text, nullable=True),
    Column("status", String(16), nullable=True),  # current | superseded | ended | disputed
    Column("claim_ids", JSON, nullable=True),  # the claims supporting it, in valid-time order
    Column("superseded_by", ID, nullable=True),  # state_key of the state that replaced it
    Column("closed_by_claim_id", ID, nullable=True),  # the evidence that closed it (supersession or negation)
    Column("closed_by_message_id", ID, nullable=True),
    Column("conflicts_with", JSON, nullable=True),  # state_keys it is disputed with
    Column("decided_by", String(100), nullable=True),  # rule | llm:<model>: what settled its closing/dispute
    Column("rationale", Text, nullable=True),
)
Index("ix_fact_states_concept", fact_states.c.concept_id, fact_states.c.attribute)
Index("ix_fact_states_subject", fact_states.c.subject, fact_states.c.attribute)
Index("ix_fact_states_key", fact_states.c.state_key)

llm_calls = Table(
    "llm_calls",
    staging_metadata,
    Column("call_id", Integer, primary_key=True, autoincrement=True),
    Column("stage", String(32), nullable=False),
    Column("model", String(100), nullable=False),
    Column("cache_key", String(64), nullable=False),
    Column("prompt_sha256", String(64), nullable=False),
    Column("schema_sha256", String(64), nullable=False),
    Column("input_sha256", String(64), nullable=False),
    Column("segment_id", ID, nullable=True),  # what the call was about (extraction: the segment)
    Column("tokens_in", Integer, nullable=False),
    Column("tokens_out", Integer, nullable=False),
    Column("latency_ms", Float, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("cache_hit", Boolean, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("outcome", String(24), nullable=False),  # ok | invalid | refused | error
    Column("error", Text, nullable=False),
    Column("called_at", DateTime, nullable=False),
)
Index("ix_llm_calls_stage", llm_calls.c.stage, llm_calls.c.called_at)

# --------------------------------------------------------------------------------------------- reflective
user_reactions = Table(
    "user_reactions",
    reflective_metadata,
    Column("reaction_id", ID, primary_key=True),
    Column("message_id", ID, nullable=False),  # evidence_message_id
    Column("segment_id", ID, nullable=False),
    Column("conversation_id", ID, nullable=False),
    Column("state", String(24), nullable=False),
    Column("state_raw", Text, nullable=False),
    Column("intensity", Float, nullable=False),
    Column("valence", String(16), nullable=False),
    Column("epistemic_status", String(16), nullable=False),
    Column("evidence_text", Text, nullable=False),  # the cue: message.text[span_start:span_end], verified
    Column("span_start", Integer, nullable=False),
    Column("span_end", Integer, nullable=False),
    Column("topic_id", ID, nullable=True),  # DURING
    Column("occurred_at", DateTime, nullable=False),
    Column("extractor", String(100), nullable=False),
    Column("recorded_at", DateTime, nullable=False),
    Column("expires_at", DateTime, nullable=True),  # retention
)
Index("ix_reactions_message", user_reactions.c.message_id)

# Messages whose reactions were purged: the extraction stage never writes a reaction on them again (a
# rebuild, another teacher) until the user lifts the tombstones (`memory-os reactions allow`).
reaction_tombstones = Table(
    "reaction_tombstones",
    reflective_metadata,
    Column("message_id", ID, primary_key=True),
    Column("purged_at", DateTime, nullable=False),
    Column("scope", String(16), nullable=False),  # all | expired
)


def _store_version_table(metadata: MetaData) -> Table:
    """The store's version stamp (memory_core.store.version): one row, bumped by every write transaction;
    `epoch` is drawn when the store is created, so a rebuilt store never repeats an old stamp."""
    table = Table(
        "store_version",
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("epoch", String(32), nullable=False),
        Column("version", BigInteger, nullable=False),
    )

    @event.listens_for(table, "after_create")
    def _seed(target, connection, **_kw):
        connection.execute(target.insert().values(id=1, epoch=uuid.uuid4().hex, version=0))

    return table


store_versions = {
    name: _store_version_table(md)
    for name, md in (
        ("source", source_metadata),
        ("staging", staging_metadata),
        ("reflective", reflective_metadata),
    )
}


def _table_version_tables(metadata: MetaData) -> tuple[Table, Table]:
    """Per table of the store, a counter raised by every transaction that wrote it (memory_core.store.version;
    `*`: a write no table could be read off), and the content fingerprints computed at a counter
    (memory_core.store.fingerprint), so an unchanged table is not hashed again."""
    versions = Table(
        "table_versions",
        metadata,
        Column("table_name", String(64), primary_key=True),
        Column("version", BigInteger, nullable=False),
    )
    fingerprints = Table(
        "table_fingerprints",
        metadata,
        Column("table_name", String(64), primary_key=True),
        Column("columns_key", String(64), primary_key=True),  # which columns were hashed
        Column("version", String(64), nullable=False),  # the table's counter and `*`'s when hashed
        Column("digest", String(64), nullable=False),
        Column("row_count", BigInteger, nullable=False),
    )
    return versions, fingerprints


table_versions = {
    name: _table_version_tables(md)
    for name, md in (
        ("source", source_metadata),
        ("staging", staging_metadata),
        ("reflective", reflective_metadata),
    )
}

METADATA_BY_STORE = {
    "source": source_metadata,
    "staging": staging_metadata,
    "reflective": reflective_metadata,
}
