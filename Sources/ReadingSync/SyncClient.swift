import EventStoreLMDB
import Foundation
import ReadingEvents
import SyncWire
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A refused or failed request to the sync server: the HTTP status and the server's error body
/// (`{"error": code, "field": field, "message": message}`), or a transport failure (status 0).
///
/// `Sendable`: values.
public struct SyncError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The HTTP status (0: no answer: the connection failed).
    public let status: Int
    /// The server's error code ("malformed_record", "forbidden", ...) or "transport".
    public let code: String
    /// The field the server named, if any ("events[3].record.data.position").
    public let field: String?
    /// What went wrong.
    public let message: String

    /// Creates an error.
    public init(status: Int, code: String, field: String? = nil, message: String) {
        self.status = status; self.code = code; self.field = field; self.message = message
    }

    /// Whether repeating the request may succeed: no answer, 408, 429, or a 5xx (the server or its
    /// database restarting). Every request of the protocol is safe to repeat.
    public var isRetryable: Bool { status == 0 || status == 408 || status == 429 || status >= 500 }

    /// "status code (field): message".
    public var description: String {
        "\(status) \(code)\(field.map { " (\($0))" } ?? ""): \(message)"
    }
}

/// How a request that may succeed later (``SyncError/isRetryable``: no answer, 408, 429, 5xx) is
/// sent again: a server that asks (`Retry-After`, seconds or an HTTP date, on 429 and 503) is
/// waited for as long as it asks, up to ``maxRetryAfter``; otherwise the waits grow from
/// ``initialBackoff`` (doubling, with jitter) up to ``maxBackoff``. A request gives up once the
/// server has been unreachable or unavailable for ``maxOutage`` (5 minutes by default, counted
/// from the request's first failure: the waits plus the time the failed attempts took), with
/// one line naming the last cause, how long it lasted and how many attempts were made.
///
/// `Sendable`: durations and a `@Sendable` closure.
public struct RetryPolicy: Sendable {
    /// How long a request keeps trying while the server is unreachable or unavailable.
    public var maxOutage: Duration
    /// The first wait after a failure that says nothing (`Retry-After` absent).
    public var initialBackoff: Duration
    /// The longest wait after a failure that says nothing.
    public var maxBackoff: Duration
    /// The longest wait a `Retry-After` is followed for: a longer one waits this long and asks again.
    public var maxRetryAfter: Duration
    /// Waits; `Task.sleep` unless a test counts the waits instead. The outage is measured by
    /// the waits asked for plus the time the attempts took, so an instant `sleep` changes no decision.
    public var sleep: @Sendable (Duration) async throws -> Void

    /// A policy; the defaults wait out an outage of 5 minutes, retrying at least every 10 s, and
    /// follow a `Retry-After` of up to 60 s.
    public init(maxOutage: Duration = .seconds(300), initialBackoff: Duration = .milliseconds(100),
                maxBackoff: Duration = .seconds(10), maxRetryAfter: Duration = .seconds(60),
                sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }) {
        self.maxOutage = maxOutage; self.initialBackoff = initialBackoff; self.maxBackoff = maxBackoff
        self.maxRetryAfter = maxRetryAfter; self.sleep = sleep
    }

    /// The defaults: an outage of up to 5 minutes is waited out.
    public static let standard = RetryPolicy()

    /// The wait a `Retry-After` value asks for: delay-seconds (`120`) or an HTTP date
    /// (`Wed, 21 Oct 2026 07:28:00 GMT`, also the obsolete RFC 850 and asctime forms), measured
    /// from `now`; nil when the value is neither. A date in the past is no wait.
    public static func retryAfter(_ value: String, now: Date = Date()) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) {
            // Digits only: more than a day is a day (the wait is capped below anyway).
            return .seconds(Int(text).map { min($0, 86_400) } ?? 86_400)
        }
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) {
                let seconds = max(0, min(date.timeIntervalSince(now), 86_400))
                return .milliseconds(Int64(seconds * 1000))
            }
        }
        return nil
    }
}

/// A device's registration with the sync server.
///
/// `Sendable`: values.
public struct DeviceRegistration: Hashable, Sendable, Codable {
    /// The reader (the UUID the host app uses in its store).
    public let reader: ReaderID
    /// This device.
    public let device: UUID
    /// The bearer token (`<reader>.<secret>`): keep it secret; the server stores only its hash.
    public let token: String
}

/// A record of this device that the server refused (400 `invalid_record` or `malformed_record`,
/// 403 `forbidden_reader`, 409 `origin_taken` or `event_id_taken`, 413 for its size: the client's
/// `event_too_large`): kept aside by
/// ``SyncClient/push(retryingRefused:)``, which pushes everything else and is not stopped by it.
///
/// `Sendable`: values.
public struct RefusedRecord: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The event.
    public let eventID: EventID
    /// The copy's origin: the replica that stamped it and its sequence there.
    public let replica: ReplicaID
    /// See ``replica``.
    public let sequence: UInt64
    /// The copy's creation stamp (its place in canonical order).
    public let stamp: UInt64
    /// The server's answer: the HTTP status, its error code, the field and the message.
    public let status: Int
    /// See ``status``.
    public let code: String
    /// See ``status``.
    public let field: String?
    /// See ``status``.
    public let message: String

    /// Creates an entry.
    public init(eventID: EventID, origin: EventOrigin, status: Int, code: String, field: String?, message: String) {
        self.eventID = eventID; self.replica = origin.replica; self.sequence = origin.sequence; self.stamp = origin.stamp
        self.status = status; self.code = code; self.field = field; self.message = message
    }

    /// "event E (replica R, sequence S): status code (field): message".
    public var description: String {
        "event \(eventID) (replica \(replica), sequence \(sequence)): \(status) \(code)\(field.map { " (\($0))" } ?? ""): \(message)"
    }

    /// An entry for a record refused for its size (`error`: status 413, `event_too_large`).
    init(origin: EventOrigin, eventID: EventID, _ error: SyncError) {
        self.init(eventID: eventID, origin: origin, status: error.status, code: error.code, field: error.field, message: error.message)
    }

    /// The server's error codes that refuse a record (not the request): the record is set aside.
    static let codes: Set<String> = ["invalid_record", "malformed_record", "forbidden_reader", "origin_taken", "event_id_taken"]
}

/// What one ``SyncClient/sync(retryingRefused:)`` did.
///
/// `Sendable`: values.
public struct SyncReport: Hashable, Sendable, CustomStringConvertible {
    /// Events pushed that the server did not hold.
    public var pushed = 0
    /// Events pushed that the server already held (a retry, or events another device pushed).
    public var pushedDuplicates = 0
    /// Records the server refused in this sync (each kept aside, see ``SyncClient/refusedRecords()``);
    /// everything else was pushed and the pull ran.
    public var refused: [RefusedRecord] = []
    /// What merging the pulled events did (events of this reader from other devices, and of
    /// partners, as they share them; ``MergeResult/quarantined`` counts those the store kept aside).
    public var pulled = MergeResult()
    /// HTTP requests this client sent during the sync (retries included): 1 for a cycle with a
    /// few new events (the push's answer carries the pull page) or none.
    public var requests = 0

    /// "pushed N (D already on the server); pulled: …" and, when any, the refused records (the
    /// first ``listedRefused`` of them named, then how many more: a display limit only; every
    /// one is kept aside, see ``SyncClient/refusedRecords()``).
    public var description: String {
        let named = refused.prefix(Self.listedRefused).map(\.description)
            + (refused.count > Self.listedRefused ? ["and \(refused.count - Self.listedRefused) more"] : [])
        return "pushed \(pushed) (\(pushedDuplicates) already on the server)"
            + (refused.isEmpty ? "" : ", \(refused.count) refused by the server (kept aside: "
                + named.joined(separator: "; ") + ")")
            + "; pulled \(pulled)"
    }

    /// How many refused records ``description`` names (the others are counted).
    public static let listedRefused = 10
}

/// Syncs one ``ReadingStore`` with the sync server of the `Server/` package over HTTP
/// (Foundation's URLSession; the protocol is `Server/openapi.yaml`).
///
/// ``sync(retryingRefused:)`` pushes this reader's events the server has not acknowledged (in canonical order,
/// in batches, each stored all or nothing and idempotent by event ID), then pulls what the device
/// lacks (its reader's events from other devices, and partners' shared events) page by page and
/// merges each page (``ReadingStore/merge(_:)``). When what it pushes fits in one request, that
/// request asks for the first page too (`pull=1`): a device's usual cycle is one request
/// (``SyncReport/requests``). Its state (the vector the server acknowledged,
/// the pull cursor) is kept in the store (``ReadingStore/setTransportState(_:_:)``), saved after
/// each acknowledged batch and merged page, so a sync interrupted anywhere (the app killed, the
/// server or its database restarted) resumes where it stopped: a repeated push is skipped by the
/// server, a repeated page by the merge. Failed requests that may succeed later
/// (``SyncError/isRetryable``) are retried as ``retry`` says: the server's `Retry-After` is
/// followed, and an outage of up to 5 minutes is waited out (``RetryPolicy``). A record the server refuses (``RefusedRecord``) is kept
/// aside and listed (``SyncReport/refused``, ``refusedRecords()``); it never stops the rest of the
/// push or the pull.
///
/// Partners (the shared diary of DoolDa): ``invite(expiresInSeconds:)`` makes a single-use code,
/// the other reader's ``accept(code:)`` pairs them, ``endPartnership(with:)`` ends it. A partner's
/// shared events arrive by ``sync(retryingRefused:)`` and are kept in this store as the partner's reader, so the
/// host app shows the partner's shelf, streak and calendar with the queries it already has.
///
/// `Sendable`: immutable after creation; the URLSession is used only through its thread-safe
/// methods, and the state lives in the (Sendable) store.
public final class SyncClient: Sendable {
    /// The store this device syncs.
    public let store: ReadingStore
    /// The server's base URL (`http://127.0.0.1:8080`).
    public let server: URL
    /// This device's bearer token.
    public let token: String
    /// The reader the token belongs to: only its events are pushed.
    public let reader: ReaderID
    /// Events per push request (the server takes at most 1,000).
    public let pushBatch: Int
    /// Bytes per push request body (the server's body limit; 4 MiB by default): a page of
    /// ``pushBatch`` events is sent in as many requests as keep each body within it.
    public let maxPushBytes: Int
    /// Events per pull page (1 ... 1,000).
    public let pullPage: Int
    /// Attempts per request before a retryable failure is thrown (no bound by default:
    /// ``retry``'s `maxOutage` bounds how long a request keeps trying).
    public let maxAttempts: Int
    /// How failed requests are sent again, and how long an outage is waited out (5 minutes by
    /// default; ``RetryPolicy``).
    public let retry: RetryPolicy
    /// Pull pages per sync (1,000 by default: 500,000 events at 500 a page): a server that keeps
    /// answering `"more": true` stops the pull there (``SyncError`` `pull_page_limit`); what was
    /// merged is kept, and the next sync continues from the saved cursor.
    public let maxPullPages: Int
    /// How often records the server refused with a conflict (409 `origin_taken`,
    /// `event_id_taken`: a cause that can go away, such as another reader's events under this
    /// device's replica that the server moved aside) are offered again by ``sync(retryingRefused:)``
    /// (one hour by default; `.zero`: at every sync). Records refused as invalid (400, 403) are
    /// offered again only when a sync is asked to (`retryingRefused`).
    public let refusedRetryInterval: Duration
    let session: URLSession
    /// The requests sent so far (``SyncReport/requests``).
    let sent = RequestCounter()

    /// The server's default request body limit: 4 MiB.
    public static let defaultMaxPushBytes = 4 * 1024 * 1024

    /// A client for `store` talking to `server` with `token`.
    ///
    /// - Throws: ``SyncError`` (status 0, "token") when the token is not `<reader UUID>.<secret>`;
    ///   (status 0, "configuration") for a `pushBatch` or `pullPage` outside 1 ... 1000, a
    ///   `maxPushBytes` below 1024, `maxAttempts` or `maxPullPages` below 1.
    public init(store: ReadingStore, server: URL, token: String, pushBatch: Int = 500, pullPage: Int = 500,
                maxPushBytes: Int = SyncClient.defaultMaxPushBytes,
                maxAttempts: Int = .max, maxPullPages: Int = 1_000, refusedRetryInterval: Duration = .seconds(3600),
                retry: RetryPolicy = .standard, session: URLSession = URLSession(configuration: .ephemeral)) throws {
        guard let dot = token.firstIndex(of: "."), let reader = ReaderID(uuidString: String(token[..<dot])) else {
            throw SyncError(status: 0, code: "token", field: "token", message: "a token is <reader UUID>.<secret>, as registration returns it")
        }
        guard (1...1_000).contains(pushBatch), (1...1_000).contains(pullPage), maxPushBytes >= 1024, maxAttempts >= 1, maxPullPages >= 1 else {
            throw SyncError(status: 0, code: "configuration",
                            message: "pushBatch and pullPage are 1 ... 1000, maxPushBytes at least 1024, maxAttempts and maxPullPages at least 1")
        }
        self.store = store; self.server = server; self.token = token; self.reader = reader
        self.pushBatch = pushBatch; self.pullPage = pullPage; self.maxPushBytes = maxPushBytes
        self.maxAttempts = maxAttempts; self.maxPullPages = maxPullPages; self.refusedRetryInterval = refusedRetryInterval
        self.retry = retry; self.session = session
    }

    // MARK: Registration

    /// Registers a device: the first device of `reader` without a token (the first registration
    /// claims the reader ID), another device of the same reader with an existing device's token.
    /// Failed attempts are retried as `retry` says (an outage of up to 5 minutes by default).
    public static func register(server: URL, reader: ReaderID, deviceName: String, token: String? = nil,
                                retry: RetryPolicy = .standard,
                                session: URLSession = URLSession(configuration: .ephemeral)) async throws -> DeviceRegistration {
        let data = try await request(session: session, server: server, token: token, method: "POST", path: "/v1/devices",
                                     body: try JSONEncoder().encode(RegisterRequest(reader: reader.uuid, name: deviceName)),
                                     attempts: .max, retry: retry)
        let answer = try decode(Registration.self, data)
        guard let reader = UUID(uuidString: answer.reader), let device = UUID(uuidString: answer.device) else {
            throw SyncError(status: 200, code: "malformed_response", field: "reader", message: "the registration's IDs are not UUIDs")
        }
        return DeviceRegistration(reader: ReaderID(reader), device: device, token: answer.token)
    }

    // MARK: Sync

    /// Pushes, then pulls (see the type's description). A record the server refuses never stops
    /// the sync: it is kept aside (``SyncReport/refused``, ``refusedRecords()``), everything else
    /// is pushed, and the pull runs.
    ///
    /// - Parameter retryingRefused: push the records kept aside by earlier syncs again first (after
    ///   an upgrade of the server that accepts more); those still refused stay aside.
    @discardableResult
    public func sync(retryingRefused: Bool = false) async throws -> SyncReport {
        let before = sent.count
        var report = SyncReport()
        if !retryingRefused, try !conflictRetryDue(), let cycle = try await pushWithPull() {
            (report.pushed, report.pushedDuplicates) = (cycle.stored, cycle.duplicates)
            report.pulled = try await pull(startingWith: cycle.page)
        } else {
            (report.pushed, report.pushedDuplicates, report.refused) = try await push(retryingRefused: retryingRefused)
            report.pulled = try await pull()
        }
        report.requests = sent.count - before
        return report
    }

    /// The usual cycle in one request: when what the server has not acknowledged fits in one
    /// push request, it is sent with `pull=1` and the answer carries the first pull page. Nil
    /// when it does not fit, when there is nothing to push, when the server refuses a record or
    /// the size (the regular push splits and keeps refused records aside): the caller then
    /// pushes and pulls apart. The page is nil when the server answers without one (an older server).
    func pushWithPull() async throws -> (stored: Int, duplicates: Int, page: PullPage?)? {
        let acknowledged = try loadVector("pushed")
        let changes = try store.changes(since: acknowledged, after: nil, limit: pushBatch)
        let mine = changes.filter { $0.reader == reader }
        guard changes.count < pushBatch, !mine.isEmpty else { return nil }
        let (requests, tooLarge) = Self.requests(mine.map(Self.pushRecord), maxBytes: maxPushBytes)
        guard requests.count == 1, tooLarge.isEmpty else { return nil }
        let data: Data
        do {
            data = try await send("POST", "/v1/events?pull=1&" + pullQuery(), body: Self.pushBody(requests[0]))
        } catch let error as SyncError where error.status == 413 || RefusedRecord.codes.contains(error.code) {
            return nil
        }
        let result = try Self.decode(PushResult.self, data)
        let moved = Self.advance(acknowledged, over: changes)
        if moved != acknowledged { try saveVector("pushed", moved) }
        return (result.stored, result.duplicates, result.page)
    }

    /// Pushes this reader's events the server has not acknowledged; returns what the server
    /// stored, what it already held, and the records it refused in this push.
    ///
    /// Pages of ``pushBatch`` events (``ReadingStore/changes(since:after:limit:)`` after the
    /// acknowledged vector) are sent in requests of at most ``maxPushBytes`` bytes; a 413 answer
    /// splits a request in two and sends each half. A refusal of a record (see
    /// ``RefusedRecord``) splits the request the same way down to the refused records, which are
    /// kept aside (in the store's transport state, listed by ``refusedRecords()``, not sent again
    /// unless `retryingRefused`, or, for a conflict, every ``refusedRetryInterval``); the rest is pushed. The acknowledged vector moves over every
    /// event of a page once the page is sent: this reader's events the server now holds or
    /// refused, and other readers' events (partners'), which this client never pushes, so that a
    /// later sync reads none of them again.
    ///
    /// An event whose request alone is larger than ``maxPushBytes`` or than the server takes
    /// (413) is refused like the others: kept aside with status 413 and code `event_too_large`
    /// (a record an older build took; this build's byte limits keep every valid record within
    /// one push).
    public func push(retryingRefused: Bool = false) async throws -> (stored: Int, duplicates: Int, refused: [RefusedRecord]) {
        var acknowledged = try loadVector("pushed")
        var total = (stored: 0, duplicates: 0, refused: [RefusedRecord]())
        var aside = try refusedRecords()
        // Records refused for a conflict (409) are offered again every `refusedRetryInterval`
        // (the cause may be gone: the server moved another reader's events aside); every
        // refused record when the caller asks. Those refused again stay aside.
        let conflictsDue = try conflictRetryDue()
        if retryingRefused || conflictsDue, !aside.isEmpty {
            let offered = aside.filter { retryingRefused || $0.status == 409 }
            let kept = aside.filter { !(retryingRefused || $0.status == 409) }
            let again = try offered.compactMap { try heldCopy($0) }.filter { $0.reader == reader }
            let (requests, tooLarge) = Self.requests(again.map(Self.pushRecord), maxBytes: maxPushBytes)
            total.refused += tooLarge
            for request in requests {
                let result = try await pushSplitting(request)
                total.stored += result.stored; total.duplicates += result.duplicates; total.refused += result.refused
            }
            aside = kept + total.refused
            try saveRefused(aside)
            try saveConflictRetry(Date())
        }
        var after: EventOrigin?
        while true {
            let page = try store.changes(since: acknowledged, after: after, limit: pushBatch)
            guard let last = page.last else { break }
            let mine = page.filter { $0.reader == reader }
            let (requests, tooLarge) = Self.requests(mine.map(Self.pushRecord), maxBytes: maxPushBytes)
            var refusedNow = tooLarge
            for request in requests {
                let result = try await pushSplitting(request)
                total.stored += result.stored; total.duplicates += result.duplicates; refusedNow += result.refused
            }
            if !refusedNow.isEmpty {
                // Kept before the vector moves over them, so that a crash between the two sends
                // them once more rather than losing them from the list.
                total.refused += refusedNow
                aside = aside.filter { old in !refusedNow.contains { $0.replica == old.replica && $0.sequence == old.sequence } } + refusedNow
                try saveRefused(aside)
                // The conflicts' retry clock starts at their first refusal.
                if try store.transportState(stateKey("refused-retried")) == nil { try saveConflictRetry(Date()) }
            }
            let moved = Self.advance(acknowledged, over: page)
            if moved != acknowledged {
                acknowledged = moved
                try saveVector("pushed", acknowledged)
            }
            after = last.origin
        }
        return total
    }

    /// The records of this device the server refused and that are kept aside, every one of them
    /// (in canonical order: by stamp, replica and sequence; no limit, and none is ever dropped,
    /// since the acknowledged vector has moved over them): those refused with a conflict (409)
    /// are offered again every ``refusedRetryInterval``; the others are not sent again unless a
    /// sync is asked to retry them. The events stay in the store and in its views. A display
    /// that lists them chooses its own limit.
    public func refusedRecords() throws -> [RefusedRecord] {
        var byOrigin: [EventOrigin: RefusedRecord] = [:]
        // The list an older build kept under one key (at most 100), until the next save.
        if let bytes = try store.transportState(stateKey("refused")),
           let legacy = try? JSONDecoder().decode([RefusedRecord].self, from: Data(bytes)) {
            for record in legacy { byOrigin[Self.origin(of: record)] = record }
        }
        for (_, value) in try store.transportStates(withPrefix: refusedPrefix) {
            // An entry that does not decode (a damaged store) is skipped, never a crash.
            guard let record = try? JSONDecoder().decode(RefusedRecord.self, from: Data(value)) else { continue }
            byOrigin[Self.origin(of: record)] = record
        }
        return byOrigin.sorted { $0.key < $1.key }.map(\.value)
    }

    /// The origin a refused record names.
    static func origin(of record: RefusedRecord) -> EventOrigin {
        EventOrigin(stamp: record.stamp, replica: record.replica, sequence: record.sequence)
    }

    /// The prefix of the transport-state keys of the refused records, one key per record
    /// (`<prefix><replica> <sequence>`). A server URL too long for the 200 bytes a key may hold
    /// is named by its FNV-1a hash instead.
    var refusedPrefix: String {
        let plain = stateKey("refused ")
        guard plain.utf8.count > 120 else { return plain }
        let hash = server.absoluteString.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        return "sync-server #\(String(hash, radix: 16)) \(reader) refused "
    }

    /// Whether records refused for a conflict (409) are kept aside and were last offered (or
    /// first refused) at least ``refusedRetryInterval`` ago.
    func conflictRetryDue() throws -> Bool {
        guard try refusedRecords().contains(where: { $0.status == 409 }) else { return false }
        guard let bytes = try store.transportState(stateKey("refused-retried")),
              let last = Double(String(decoding: bytes, as: UTF8.self)) else { return true }
        let (seconds, attoseconds) = refusedRetryInterval.components
        return Date().timeIntervalSince1970 - last >= Double(seconds) + Double(attoseconds) / 1e18
    }

    func saveConflictRetry(_ date: Date) throws {
        try store.setTransportState(stateKey("refused-retried"), Array(String(date.timeIntervalSince1970).utf8))
    }

    /// Keeps exactly `records` aside, each under its own transport-state key (one transaction:
    /// a crash keeps the old list or the new one), however many there are.
    func saveRefused(_ records: [RefusedRecord]) throws {
        var states: [String: [UInt8]] = [:]
        for record in records {
            var data = try JSONEncoder().encode(record)
            if data.count > 60_000 {
                // A server's message too long for one state value: kept cut (the record is kept whole).
                let cut = RefusedRecord(eventID: record.eventID, origin: Self.origin(of: record), status: record.status, code: record.code,
                                        field: record.field.map { String($0.prefix(200)) }, message: String(record.message.prefix(2_000)))
                data = try JSONEncoder().encode(cut)
            }
            states[refusedPrefix + "\(record.replica) \(record.sequence)"] = Array(data)
        }
        try store.replaceTransportStates(withPrefix: refusedPrefix, by: states)
        if try store.transportState(stateKey("refused")) != nil { try store.setTransportState(stateKey("refused"), nil) }
    }

    /// The copy of a refused record this store holds (the record or an alias with that origin).
    func heldCopy(_ refused: RefusedRecord) throws -> EventEnvelope? {
        // The copy is the first event in canonical order after this origin, when the store holds it.
        let before = EventOrigin(stamp: refused.stamp, replica: refused.replica, sequence: refused.sequence - 1)
        return try store.changes(since: VersionVector(), after: before, limit: 1).first {
            $0.eventID == refused.eventID && $0.origin?.replica == refused.replica && $0.origin?.sequence == refused.sequence
        }
    }

    /// One push request's events: their IDs, origins and base64 records.
    typealias PushRecords = [(eventID: EventID, origin: EventOrigin?, record: String)]

    /// One event of a push request.
    static func pushRecord(_ envelope: EventEnvelope) -> PushRecords.Element {
        (envelope.eventID, envelope.origin, Data(BinaryEventCodec.encodeRecord(envelope)).base64EncodedString())
    }

    /// The JSON body of a push request: `{"events":[{"record":"…"},…]}`, written by hand so its
    /// size is known exactly (base64 needs no escaping).
    /// The JSON of `SyncWire.PushRequest`, written out so that its size is known beforehand
    /// (``pushBodySize(_:)``).
    static func pushBody(_ records: PushRecords) -> Data {
        Data(("{\"events\":[" + records.map { "{\"record\":\"\($0.record)\"}" }.joined(separator: ",") + "]}").utf8)
    }

    /// The size of ``pushBody(_:)``.
    static func pushBodySize(_ records: PushRecords) -> Int {
        13 + records.reduce(0) { $0 + $1.record.utf8.count + 13 } + max(records.count - 1, 0)
    }

    /// `records` cut, in order, into requests whose bodies keep within `maxBytes`, and the
    /// records whose request alone would not (set aside by the caller as refused for their size).
    static func requests(_ records: PushRecords, maxBytes: Int) -> (requests: [PushRecords], tooLarge: [RefusedRecord]) {
        var result: [PushRecords] = []
        var tooLarge: [RefusedRecord] = []
        var current: PushRecords = []
        var size = 0
        for item in records {
            let single = pushBodySize([item])
            guard single <= maxBytes else {
                let error = Self.tooLarge(item.eventID, "needs a push request of \(single) bytes; the limit is \(maxBytes) bytes")
                if let origin = item.origin { tooLarge.append(RefusedRecord(origin: origin, eventID: item.eventID, error)) }
                continue
            }
            if !current.isEmpty, size + single - 13 + 1 > maxBytes {
                result.append(current)
                current = []
            }
            size = current.isEmpty ? single : size + single - 13 + 1
            current.append(item)
        }
        if !current.isEmpty { result.append(current) }
        return (result, tooLarge)
    }

    /// The error for one event that cannot be pushed for its size.
    static func tooLarge(_ event: EventID, _ why: String) -> SyncError {
        SyncError(status: 413, code: "event_too_large", field: "event \(event)", message: "event \(event) \(why)")
    }

    /// Sends one push request; a 413 answer (the body is over the server's limit) or a refused
    /// record (``RefusedRecord``) splits it in two halves, each sent the same way, down to one
    /// event: a refused event alone, or one too large alone, is returned as refused.
    func pushSplitting(_ records: PushRecords) async throws -> (stored: Int, duplicates: Int, refused: [RefusedRecord]) {
        do {
            let data = try await send("POST", "/v1/events", body: Self.pushBody(records))
            let result = try Self.decode(PushResult.self, data)
            return (result.stored, result.duplicates, [])
        } catch let error as SyncError where error.status == 413 || RefusedRecord.codes.contains(error.code) {
            guard records.count > 1 else {
                let record = records[0]
                guard let origin = record.origin else { throw error }
                guard error.status != 413 else {
                    // Set aside like any refused record: it never stops the push of the others.
                    let tooLarge = Self.tooLarge(record.eventID, "alone makes a push request of \(Self.pushBodySize(records)) bytes, "
                                                 + "which the server refuses as too large (\(error.message))")
                    return (0, 0, [RefusedRecord(origin: origin, eventID: record.eventID, tooLarge)])
                }
                return (0, 0, [RefusedRecord(eventID: record.eventID, origin: origin, status: error.status, code: error.code, field: error.field, message: error.message)])
            }
            let half = records.count / 2
            let first = try await pushSplitting(Array(records[..<half]))
            let second = try await pushSplitting(Array(records[half...]))
            return (first.stored + second.stored, first.duplicates + second.duplicates, first.refused + second.refused)
        }
    }

    /// Pulls what this device lacks, page by page, merging each page; returns the merges' total.
    public func pull() async throws -> MergeResult {
        try await pull(startingWith: nil)
    }

    /// The query of a pull after the saved cursor: `limit=N&after=CURSOR`.
    func pullQuery() throws -> String {
        var query = "limit=\(pullPage)"
        if let cursor = try store.transportState(stateKey("cursor")).map({ String(decoding: $0, as: UTF8.self) }) {
            query += "&after=" + (cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cursor)
        }
        return query
    }

    /// ``pull()``, its first page already answered (by a push with `pull=1`) when `first` is given.
    ///
    /// The loop is bounded: a page that says `"more": true` must bring events and a new cursor
    /// (the server's pages always do), else the pull stops (``SyncError`` `pull_no_progress`);
    /// and at most ``maxPullPages`` pages are pulled per sync (`pull_page_limit`). Either way what
    /// was merged and the cursor are kept.
    func pull(startingWith first: PullPage?) async throws -> MergeResult {
        var total = MergeResult()
        var first = first
        // Only this reader's and its partners' events merge; a record of any other reader (a
        // reader never paired) is kept in the quarantine. The partners are asked for once, and
        // only when a page holds another reader's events (a sync of the reader's own events
        // stays one request).
        var readers: Set<ReaderID> = [reader]
        var askedForPartners = false
        var pages = 0
        var cursor = try store.transportState(stateKey("cursor")).map { String(decoding: $0, as: UTF8.self) }
        while true {
            let page: PullPage
            if let given = first {
                page = given
                first = nil
            } else {
                page = try Self.decode(PullPage.self, try await send("GET", "/v1/events?" + pullQuery(), body: nil))
            }
            var envelopes: [EventEnvelope] = []
            envelopes.reserveCapacity(page.events.count)
            for (index, event) in page.events.enumerated() {
                guard let bytes = Data(base64Encoded: event.record) else {
                    throw SyncError(status: 200, code: "malformed_response", field: "events[\(index)].record", message: "not base64")
                }
                do { envelopes.append(try BinaryEventCodec.decodeRecord([UInt8](bytes))) } catch {
                    throw SyncError(status: 200, code: "malformed_response", field: "events[\(index)].record", message: error.description)
                }
            }
            if !askedForPartners, envelopes.contains(where: { !readers.contains($0.reader) }) {
                readers.formUnion(try await partners())
                askedForPartners = true
            }
            total = total + (try store.merge(envelopes, readers: readers))
            try store.setTransportState(stateKey("cursor"), Array(page.next.utf8))
            if !page.more { return total }
            pages += 1
            guard !page.events.isEmpty, page.next != cursor else {
                throw SyncError(status: 200, code: "pull_no_progress", field: "more",
                                message: "the server answered \"more\": true with \(page.events.isEmpty ? "no events" : "the cursor it was asked from") "
                                    + "(page \(pages) of this sync); the pull stopped, keeping what it merged (\(total.appended) new events)")
            }
            guard pages < maxPullPages else {
                throw SyncError(status: 200, code: "pull_page_limit", field: "more",
                                message: "pulled \(pages) pages (\(total.received) events, \(total.appended) new) in this sync, the most one sync pulls, "
                                    + "and the server still answers \"more\": true; what was merged is kept: sync again to continue")
            }
            cursor = page.next
        }
    }

    // MARK: Partners

    /// A single-use partner invite code and when it expires (the wire type of `POST /v1/invites`).
    public typealias Invite = SyncWire.Invite

    /// Creates a single-use invite code that expires after `expiresInSeconds` (1 ... 604,800).
    public func invite(expiresInSeconds: Int = 86_400) async throws -> Invite {
        let body = try JSONEncoder().encode(InviteRequest(expiresInSeconds: expiresInSeconds))
        return try Self.decode(Invite.self, try await send("POST", "/v1/invites", body: body))
    }

    /// Accepts a partner's invite code; returns the partner's reader.
    public func accept(code: String) async throws -> ReaderID {
        let answer = try Self.decode(AcceptAnswer.self, try await send("POST", "/v1/invites/accept",
                                                                       body: try JSONEncoder().encode(AcceptRequest(code: code))))
        return try Self.readerID(answer.partner, field: "partner")
    }

    /// This reader's partners.
    public func partners() async throws -> [ReaderID] {
        let list = try Self.decode(PartnerList.self, try await send("GET", "/v1/partners", body: nil))
        return try list.partners.map { try Self.readerID($0.reader, field: "partners.reader") }
    }

    /// Ends the partnership with `partner` (either side may): nothing new is shared afterwards.
    public func endPartnership(with partner: ReaderID) async throws {
        _ = try await send("DELETE", "/v1/partners/\(partner)", body: nil)
    }

    /// What this reader's partners see (applies to their next pulls).
    public func setShareSettings(_ settings: ShareSettings) async throws {
        _ = try await send("PUT", "/v1/share-settings", body: try JSONEncoder().encode(settings))
    }

    /// What this reader's partners see, by group name (`profile`, `progress`, `goals`,
    /// `finishes`, `ratings`, `sentences`, `memos`: ``ShareGroup``'s raw values): a group left out
    /// is not shared. Memos are shared only when chosen here.
    public func setShareSettings(_ groups: [String: Bool]) async throws {
        var settings = ShareSettings(groups: [])
        for (name, shared) in groups {
            switch ShareGroup(rawValue: name) {
            case .profile?: settings.profile = shared
            case .progress?: settings.progress = shared
            case .goals?: settings.goals = shared
            case .finishes?: settings.finishes = shared
            case .ratings?: settings.ratings = shared
            case .sentences?: settings.sentences = shared
            case .memos?: settings.memos = shared
            case .books?, .privateOnly?, nil:
                let all = ShareSettings(profile: true, progress: true, goals: true, finishes: true, ratings: true, sentences: true, memos: true)
                throw SyncError(status: 0, code: "share_group", field: name,
                                message: "share groups are \(all.groups.filter { $0 != .books }.map(\.rawValue).joined(separator: ", "))")
            }
        }
        try await setShareSettings(settings)
    }

    /// A reader ID of an answer.
    static func readerID(_ text: String, field: String) throws -> ReaderID {
        guard let uuid = UUID(uuidString: text) else {
            throw SyncError(status: 200, code: "malformed_response", field: field, message: "\(text) is not a UUID")
        }
        return ReaderID(uuid)
    }

    // MARK: Internals

    /// The state key of this server and reader.
    func stateKey(_ name: String) -> String { "sync-server \(server.absoluteString) \(reader) \(name)" }

    func loadVector(_ name: String) throws -> VersionVector {
        guard let bytes = try store.transportState(stateKey(name)) else { return VersionVector() }
        return (try? VersionVector(parsing: String(decoding: bytes, as: UTF8.self))) ?? VersionVector()
    }

    func saveVector(_ name: String, _ vector: VersionVector) throws {
        try store.setTransportState(stateKey(name), Array(vector.description.utf8))
    }

    /// `vector` moved over the sequences of `envelopes` (a page just pushed: events the server
    /// acknowledged, and other readers' events, which are never pushed), as far as they are contiguous.
    static func advance(_ vector: VersionVector, over envelopes: [EventEnvelope]) -> VersionVector {
        var sent: [ReplicaID: Set<UInt64>] = [:]
        for envelope in envelopes { if let origin = envelope.origin { sent[origin.replica, default: []].insert(origin.sequence) } }
        var result = vector
        for (replica, sequences) in sent {
            var head = result[replica]
            while sequences.contains(head + 1) { head += 1 }
            result[replica] = head
        }
        return result
    }

    func send(_ method: String, _ path: String, body: Data?) async throws -> Data {
        try await Self.request(session: session, server: server, token: token, method: method, path: path, body: body,
                               attempts: maxAttempts, retry: retry, counter: sent)
    }

    /// Sends a request; a retryable failure is sent again as `retry` says (``RetryPolicy``),
    /// at most `attempts` times in all.
    static func request(session: URLSession, server: URL, token: String?, method: String, path: String, body: Data?,
                        attempts: Int, retry: RetryPolicy = .standard, counter: RequestCounter? = nil) async throws -> Data {
        guard let url = URL(string: server.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + path) else {
            throw SyncError(status: 0, code: "url", message: "\(server)\(path) is not a URL")
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = requestTimeout
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let clock = ContinuousClock()
        var backoff = retry.initialBackoff
        // The outage so far: the waits asked for and the time the failed attempts took.
        var outage = Duration.zero
        var attempt = 0
        while true {
            attempt += 1
            counter?.add()
            let failure: SyncError
            var asked: Duration?
            let started = clock.now
            do {
                let (data, response) = try await session.data(for: request)
                let http = response as? HTTPURLResponse
                let status = http?.statusCode ?? 0
                if (200..<300).contains(status) { return data }
                let parsed = try? JSONDecoder().decode(ErrorBody.self, from: data)
                failure = SyncError(status: status, code: parsed?.error ?? "http_\(status)", field: parsed?.field,
                                    message: parsed?.message ?? String(decoding: data.prefix(300), as: UTF8.self))
                asked = http?.value(forHTTPHeaderField: "Retry-After").flatMap { RetryPolicy.retryAfter($0) }
            } catch let error as SyncError {
                throw error
            } catch {
                failure = SyncError(status: 0, code: "transport", message: transportReason(error, url: url))
            }
            outage += clock.now - started
            guard failure.isRetryable, attempt < attempts else { throw gaveUp(failure, after: outage, attempts: attempt) }
            let wait: Duration
            if let asked {
                // The server said when: that long (at least the first backoff, never a busy loop),
                // up to `maxRetryAfter`; past the outage budget the request gives up now.
                wait = max(min(asked, retry.maxRetryAfter), retry.initialBackoff)
            } else {
                wait = min(backoff * Double.random(in: 0.5...1), retry.maxOutage - outage)
                backoff = min(backoff * 2, retry.maxBackoff)
            }
            guard wait > .zero, outage + wait <= retry.maxOutage else {
                throw gaveUp(failure, after: outage, attempts: attempt, outageSpent: true,
                             asked: asked.map { max(min($0, retry.maxRetryAfter), retry.initialBackoff) })
            }
            try await retry.sleep(wait)
            outage += wait
        }
    }

    /// The failure a request ends with: the last one, its message saying how long the server was
    /// unreachable or unavailable and how many attempts were made (one line), whenever the request
    /// was retried or gave up for the outage limit (`outageSpent`: also after one slow attempt).
    static func gaveUp(_ failure: SyncError, after outage: Duration, attempts: Int, outageSpent: Bool = false,
                       asked: Duration? = nil) -> SyncError {
        guard attempts > 1 || asked != nil || outageSpent else { return failure }
        let seconds = Double(outage.components.seconds) + Double(outage.components.attoseconds) / 1e18
        var note = "gave up after \(String(format: "%.1f", seconds)) s and \(attempts) attempt\(attempts == 1 ? "" : "s")"
        if let asked { note += "; the server asked to wait \(asked.components.seconds) s more, past the outage the client waits out" }
        return SyncError(status: failure.status, code: failure.code, field: failure.field, message: "\(failure.message) (\(note))")
    }

    /// One line naming the real cause of a request that got no answer: the host and port, and
    /// what happened (connection refused, timeout, a host name not found, ...), never a raw
    /// `NSError` dump.
    static func transportReason(_ error: any Error, url: URL) -> String {
        let host = url.host ?? "?"
        let port = url.port ?? (url.scheme == "https" ? 443 : 80)
        let place = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        // URLError, or the NSError in NSURLErrorDomain that URLSession on Linux may throw.
        let ns = error as NSError
        let code: URLError.Code
        if let urlError = error as? URLError { code = urlError.code } else if ns.domain == NSURLErrorDomain,
                                                                              let known = URLError.Code(rawValue: ns.code) {
            code = known
        } else {
            return "no answer from \(place): \(ns.localizedDescription) (\(ns.domain) \(ns.code))"
        }
        switch code {
        case .cannotConnectToHost: return "connection refused at \(place) (is the server running?)"
        case .timedOut: return "no answer from \(place) within \(Int(requestTimeout)) s (timeout)"
        case .cannotFindHost, .dnsLookupFailed: return "the host name \(host) was not found (DNS)"
        case .networkConnectionLost: return "the connection to \(place) was lost before the answer"
        case .notConnectedToInternet: return "no network connection (to reach \(place))"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
             .serverCertificateHasUnknownRoot, .clientCertificateRejected, .clientCertificateRequired:
            return "the TLS connection to \(place) failed (certificate or handshake)"
        case .badServerResponse: return "\(place) sent an answer that is not HTTP"
        case .unsupportedURL: return "\(url.absoluteString) is not a URL the client can reach (http or https)"
        default: return "no answer from \(place): URL error \(code.rawValue)"
        }
    }

    /// Seconds a request waits for an answer.
    static let requestTimeout: Double = 30

    static func decode<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do { return try decoder.decode(type, from: data) } catch {
            throw SyncError(status: 200, code: "malformed_response", message: "\(T.self): \(error)")
        }
    }
}

/// Counts a client's HTTP requests.
///
/// `@unchecked Sendable`: `value` is only touched under `lock`.
final class RequestCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    var count: Int { lock.withLock { value } }
    func add() { lock.withLock { value += 1 } }
}
