import Foundation
import NIOCore
import PostgresNIO

// The statements of every request's hot path, prepared once per connection (PostgresNIO prepares
// a statement on a connection the first time it runs there): no planning per request. Each
// parameter is cast in the SQL so that its type never depends on inference.

/// The push (see ``PostgresSyncStore/push(reader:events:)``): one statement, the batch as arrays.
///
/// `Sendable`: a value type of Sendable arrays.
struct PushStatement: PostgresPreparedStatement {
    static let sql = """
            WITH locked AS (
                SELECT last_arrival FROM readers WHERE reader_id = $1::uuid FOR UPDATE
            ), incoming AS (
                -- `m`: the first position of the row's event ID in the batch (a later row with
                -- the same ID is an alias), one sort instead of a scan of the batch per row.
                SELECT *, min(n) OVER (PARTITION BY e) AS m
                FROM unnest($2::uuid[], $3::text[], $4::bigint[],
                            $5::bigint[], $6::timestamptz[],
                            $7::text[], $8::text[],
                            $9::bytea[], $10::bytea[])
                     WITH ORDINALITY AS u(e, r, s, h, o, t, g, b, f, n)
            ), ids AS (
                SELECT DISTINCT id FROM unnest($2::uuid[]) AS u(id)
            ), owned AS (
                -- Each ID's owner (`event_ids`, migration 6): one probe of its primary key per
                -- distinct ID. Here and in `known`, `OFFSET 0` keeps the subquery a per-row
                -- look-up, not a join the planner may turn into a hash join: a plan that does not
                -- depend on statistics. `event_id = ANY($2)` over partitions that autovacuum has
                -- not analyzed yet is estimated at every row (each element at 1/200 of the table),
                -- and a fresh deployment read every partition sequentially per push (issue 38).
                SELECT o.* FROM ids AS q CROSS JOIN LATERAL (
                    SELECT event_id, reader_id FROM event_ids WHERE event_id = q.id OFFSET 0) AS o
            ), known AS (
                -- The reader's own rows with the batch's IDs: a look-up in its partition only.
                SELECT k.* FROM ids AS q CROSS JOIN LATERAL (
                    SELECT event_id, replica, sequence, fact FROM events
                    WHERE reader_id = $1::uuid AND event_id = q.id OFFSET 0) AS k
            ), foreign_id AS (
                -- An ID another reader owns and this reader does not hold (an ID that two readers
                -- held before migration 6 stays pushable by both).
                SELECT o.event_id FROM owned o
                WHERE o.reader_id <> $1::uuid AND NOT EXISTS (SELECT 1 FROM known k WHERE k.event_id = o.event_id) LIMIT 1
            ), held AS (
                SELECT i.n FROM incoming i JOIN known k ON k.event_id = i.e
                    AND k.replica IS NOT DISTINCT FROM nullif(i.r, '')::uuid AND k.sequence = i.s
            ), other_fact AS (
                SELECT i.e FROM incoming i JOIN known k ON k.event_id = i.e
                WHERE k.fact IS DISTINCT FROM i.f AND i.n NOT IN (SELECT n FROM held)
                ORDER BY i.n LIMIT 1
            ), owners AS (
                -- A replica belongs to the reader whose push first used it. A new replica is
                -- claimed here; ON CONFLICT DO UPDATE locks and returns the committed owner row
                -- (even one committed after this statement's snapshot) only when it is another
                -- reader's: the owner's own pushes write nothing.
                INSERT INTO replica_owners (replica, reader_id)
                -- After the reader's row lock (the join with `locked`), in replica order: no
                -- deadlock with another push of the reader or with another reader's.
                SELECT DISTINCT nullif(r, '')::uuid, $1::uuid FROM incoming CROSS JOIN locked WHERE r <> '' ORDER BY 1
                ON CONFLICT (replica) DO UPDATE SET reader_id = replica_owners.reader_id
                WHERE replica_owners.reader_id <> $1::uuid
                RETURNING replica, reader_id
            ), origin_taken AS (
                SELECT i.e FROM incoming i
                WHERE i.n NOT IN (SELECT n FROM held) AND (
                    EXISTS (SELECT 1 FROM owners o WHERE o.replica = nullif(i.r, '')::uuid AND o.reader_id <> $1::uuid)
                    OR EXISTS (SELECT 1 FROM events x WHERE x.reader_id = $1::uuid AND x.replica = nullif(i.r, '')::uuid
                                                        AND x.sequence = i.s AND x.event_id <> i.e))
                ORDER BY i.n LIMIT 1
            ), fresh AS (
                SELECT i.*, row_number() OVER (ORDER BY i.n) AS k,
                       EXISTS (SELECT 1 FROM known WHERE known.event_id = i.e)
                       OR i.m < i.n AS a
                FROM incoming i
                WHERE i.n NOT IN (SELECT n FROM held) AND NOT EXISTS (SELECT 1 FROM foreign_id)
                  AND NOT EXISTS (SELECT 1 FROM origin_taken) AND NOT EXISTS (SELECT 1 FROM other_fact)
            ), claimed AS (
                -- The batch's new IDs, claimed for the reader in ID order (two pushes that claim
                -- some of the same IDs wait on each other in one order: no deadlock). When another
                -- reader's push claimed one after this statement's snapshot, the primary key
                -- refuses this claim (23505): nothing is stored, and the push runs again, sees that
                -- claim and answers 409 (``PostgresSyncStore/push(reader:events:)``).
                INSERT INTO event_ids (event_id, reader_id)
                SELECT DISTINCT f.e, $1::uuid FROM fresh f WHERE NOT EXISTS (SELECT 1 FROM owned o WHERE o.event_id = f.e) ORDER BY 1
            ), inserted AS (
                INSERT INTO events (reader_id, arrival, event_id, replica, sequence, stamp, occurred_at, type, share_group, record,
                                    alias, fact)
                SELECT $1::uuid, (SELECT last_arrival FROM locked) + k, e, nullif(r, '')::uuid, s, h, o, t, g, b, a, f FROM fresh
                RETURNING arrival, share_group
            ), bumped AS (
                UPDATE readers SET last_arrival = (SELECT max(arrival) FROM inserted)
                WHERE reader_id = $1::uuid AND EXISTS (SELECT 1 FROM inserted)
                RETURNING last_arrival, pg_notify($11::text, $12::text
                    || (SELECT string_agg(DISTINCT share_group, ',') FROM inserted))::text AS notified
            )
            SELECT (SELECT count(*) FROM inserted)::bigint,
                   coalesce((SELECT last_arrival FROM bumped WHERE notified IS NOT NULL OR notified IS NULL),
                            (SELECT last_arrival FROM locked), 0)::bigint,
                   (SELECT event_id FROM foreign_id),
                   (SELECT e FROM origin_taken),
                   (SELECT e FROM other_fact)
        """
    typealias Row = (Int64, Int64, UUID?, UUID?, UUID?)

    var reader: UUID
    var ids: [UUID]
    var replicas: [String]
    var sequences: [Int64]
    var stamps: [Int64]
    var occurredAt: [Date]
    var types: [String]
    var groups: [String]
    var records: [ByteBuffer]
    var facts: [ByteBuffer]
    var channel: String
    var payloadPrefix: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 12)
        bindings.append(reader)
        bindings.append(ids)
        bindings.append(replicas)
        bindings.append(sequences)
        bindings.append(stamps)
        bindings.append(occurredAt)
        bindings.append(types)
        bindings.append(groups)
        bindings.append(records)
        bindings.append(facts)
        bindings.append(channel)
        bindings.append(payloadPrefix)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// What both pull statements bind, and the SQL they share: the reader (`$1`); per source (`$2`-`$6`)
/// its ID, the arrival it is read after, its groups (`*`: all), and the arrival through which, in
/// the groups named, a restarted partner already delivered; the page size (`$7`).
///
/// `Sendable`: a value type of Sendable arrays.
struct PullArguments: Sendable {
    var reader: UUID
    var sources: [UUID]
    var after: [Int64]
    var groups: [String]
    var skipThrough: [Int64]
    var skipGroups: [String]
    var limit: Int64

    init(reader: UUID, scans: [PostgresSyncStore.Scan], limit: Int64) {
        self.reader = reader
        sources = scans.map(\.reader)
        after = scans.map(\.after)
        groups = scans.map(\.groups)
        skipThrough = scans.map(\.skipThrough)
        skipGroups = scans.map(\.skipGroups)
        self.limit = limit
    }

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 7)
        bindings.append(reader)
        bindings.append(sources)
        bindings.append(after)
        bindings.append(groups)
        bindings.append(skipThrough)
        bindings.append(skipGroups)
        bindings.append(limit)
        return bindings
    }

    /// `src`: the sources still readable (the reader itself, and partners still paired).
    static let sourcesCTE = """
            WITH src AS (
                SELECT * FROM unnest($2::uuid[], $3::bigint[], $4::text[],
                                     $5::bigint[], $6::text[])
                              AS s(reader_id, after_arrival, groups, skip_through, skip_groups)
                WHERE s.reader_id = $1::uuid
                   OR EXISTS (SELECT 1 FROM partnerships p WHERE p.reader_id = $1::uuid AND p.partner_id = s.reader_id)
            )
        """

    /// The page's order: the reader's own events first, then partners by ID, each by arrival.
    static let pageOrder = "src.reader_id <> $1::uuid, src.reader_id, e.arrival"

    /// The page's rows (`src` and `e`): for each source at most `$7` events after its position, in
    /// its groups, minus what a restarted partner already delivered; the first `$7` in page order.
    static let pageRows = """
            FROM src CROSS JOIN LATERAL (
                SELECT arrival, event_id, record FROM events e
                WHERE e.reader_id = src.reader_id AND e.arrival > src.after_arrival
                  AND (src.groups = '*' OR e.share_group = ANY(string_to_array(src.groups, ',')))
                  AND NOT (e.arrival <= src.skip_through AND e.share_group = ANY(string_to_array(src.skip_groups, ',')))
                ORDER BY e.arrival LIMIT $7::bigint
            ) e
            ORDER BY \(pageOrder)
            LIMIT $7::bigint
        """
}

/// The pull (see ``PostgresSyncStore/pull(reader:after:limit:)``): one statement over the sources.
///
/// `Sendable`: a value type of Sendable arrays.
struct PullStatement: PostgresPreparedStatement {
    static let sql = PullArguments.sourcesCTE + """

            SELECT src.reader_id, e.arrival, e.event_id, e.record

        """ + PullArguments.pageRows
    typealias Row = (UUID, Int64, UUID, ByteBuffer)

    var arguments: PullArguments

    func makeBindings() throws -> PostgresBindings { arguments.makeBindings() }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// The pull in one statement (see ``PostgresSyncStore/pullInOneStatement(reader:after:limit:)``):
/// the page of ``PullStatement`` for the sources given, then, in the same snapshot, the reader's
/// partners now with the groups each shares (`NULL`: the defaults), so that the caller can check
/// the sources it assumed. Page rows first, in page order; then one row per partner.
///
/// `Sendable`: a value type of Sendable arrays.
struct PullPageStatement: PostgresPreparedStatement {
    static let sql = PullArguments.sourcesCTE + """
            , page AS (
                SELECT src.reader_id, e.arrival, e.event_id, e.record,
                       row_number() OVER (ORDER BY \(PullArguments.pageOrder)) AS k

        """ + PullArguments.pageRows + """

            )
            SELECT false, reader_id, arrival, event_id, record, NULL::text[], k FROM page
            UNION ALL
            SELECT true, p.partner_id, 0::bigint, p.partner_id, NULL::bytea, s.groups, 0::bigint
            FROM partnerships p LEFT JOIN share_settings s ON s.reader_id = p.partner_id
            WHERE p.reader_id = $1::uuid
            ORDER BY 1, 7
        """
    typealias Row = (Bool, UUID, Int64, UUID, ByteBuffer?, [String]?)

    var arguments: PullArguments

    func makeBindings() throws -> PostgresBindings { arguments.makeBindings() }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (isPartner, source, arrival, id, record, groups, _) = try row.decode((Bool, UUID, Int64, UUID, ByteBuffer?, [String]?, Int64).self)
        return (isPartner, source, arrival, id, record, groups)
    }
}

/// A token look-up (see ``PostgresSyncStore/authenticate(token:)``).
///
/// `Sendable`: a value type.
struct AuthenticateStatement: PostgresPreparedStatement {
    static let sql = """
        SELECT device_id FROM devices WHERE reader_id = $1::uuid AND token_hash = $2::bytea AND revoked_at IS NULL
        """
    typealias Row = UUID

    var reader: UUID
    var hash: ByteBuffer

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(reader)
        bindings.append(hash)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(UUID.self) }
}
