import EventStoreLMDB
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ReadingEvents

/// A request the sync server refused (4xx: nothing was stored), or that kept failing.
///
/// `Sendable`: a value type of strings and integers.
public struct SyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status (0 when no response came).
    public let status: Int
    /// The server's error code (`malformed_record`, `invite_expired`, ...), or `transport`.
    public let code: String
    /// The request field at fault, when the server named one.
    public let field: String?
    /// A sentence for people.
    public let message: String

    /// Creates an error.
    public init(status: Int, code: String, field: String?, message: String) {
        self.status = status
        self.code = code
        self.field = field
        self.message = message
    }

    /// `"HTTP <status> <code> <field>: <message>"`.
    public var description: String { "HTTP \(status) \(code)\(field.map { " \($0)" } ?? ""): \(message)" }
}

/// Where a device's sync stands, persisted between runs: what of this store the server holds
/// (a version vector), and the server's pull cursor.
///
/// `Sendable`: a value type.
public struct SyncState: Codable, Sendable, Hashable {
    /// The store's version vector as of the last complete push: the server holds all of it.
    public var pushed: VersionVector
    /// The server's opaque pull cursor (`next` of the last merged page); empty at first.
    public var cursor: String

    /// A state from nothing (everything is pushed and pulled again; both are idempotent).
    public init(pushed: VersionVector = VersionVector(), cursor: String = "") {
        self.pushed = pushed
        self.cursor = cursor
    }
}

/// What one ``SyncClient/sync(_:)`` did.
///
/// `Sendable`: integers.
public struct SyncReport: Sendable, Hashable, CustomStringConvertible {
    /// Events sent to the server.
    public var pushed = 0
    /// Of them, events the server stored now (the others it already held).
    public var storedByServer = 0
    /// Events received from the server.
    public var pulled = 0
    /// Of them, events new to this store (its own reader's from other devices, and partners').
    public var merged = 0
    /// Requests that failed and were retried.
    public var retries = 0

    /// "pushed P (S stored), pulled Q (M new), R retries".
    public var description: String {
        "pushed \(pushed) (\(storedByServer) stored), pulled \(pulled) (\(merged) new), \(retries) retries"
    }
}

/// A device registered on the server: keep the token (in the Keychain, in a host app).
///
/// `Sendable`: a value type.
public struct DeviceRegistration: Codable, Sendable, Hashable {
    /// The reader.
    public var reader: String
    /// The device's ID on the server.
    public var device: String
    /// The bearer token.
    public var token: String
}

/// A partner invite: give the code to the partner.
///
/// `Sendable`: a value type.
public struct PartnerInvite: Codable, Sendable, Hashable {
    /// The code (10 characters).
    public var code: String
    /// When it stops working (ISO 8601).
    public var expiresAt: String
}

/// The client of the sync server (`Server/`), Foundation's URLSession only.
///
/// A sync pushes the store's ``ReadingStore/changes(since:after:limit:)`` beyond what the server
/// is known to hold, then pulls pages after its cursor and ``ReadingStore/merge(_:)``s them;
/// partners' shared events land in the same store under the partner's reader. Every step is
/// idempotent (the server skips known event IDs, merge skips held events), so a sync cut off at
/// any point (a killed app, a lost connection, the server or its database restarting) is simply
/// run again; transport failures and 5xx answers are retried here with backoff first. The state
/// is saved after each step that the server acknowledged.
///
/// `Sendable`: immutable configuration; the state file is its only mutable state (one sync at a time per file).
public struct SyncClient: Sendable {
    /// The server's base URL.
    public let server: URL
    /// The device's bearer token.
    public let token: String
    /// The JSON file of ``SyncState``.
    public let statePath: URL
    /// Events per push (the server takes at most 1000).
    public var pushBatch = 500
    /// Events per pull page.
    public var pullLimit = 500
    /// Attempts per request before giving up on transport failures and 5xx answers.
    public var attempts = 8

    /// The token's reader (a token reads `<reader UUID>.<secret>`): only its events are pushed;
    /// partners' events that the store holds came from the server and stay there.
    public let reader: ReaderID?

    /// Creates a client for a registered device.
    public init(server: URL, token: String, statePath: URL) {
        self.server = server
        self.token = token
        self.statePath = statePath
        self.reader = token.split(separator: ".").first.flatMap { ReaderID(uuidString: String($0)) }
    }

    // MARK: Registration

    /// Registers a device of `reader`: the first device claims the reader (no token); further
    /// devices pass the token of one of the reader's devices.
    public static func register(server: URL, reader: ReaderID, deviceName: String,
                                existingToken: String? = nil) async throws -> DeviceRegistration {
        let body = try JSONSerialization.data(withJSONObject: ["reader": reader.description, "name": deviceName])
        var retries = 0
        let data = try await send(server: server, token: existingToken, method: "POST", path: "/v1/devices",
                                  body: body, attempts: 4, retries: &retries)
        return try JSONDecoder().decode(DeviceRegistration.self, from: data)
    }

    // MARK: Sync

    /// The saved state, or a fresh one.
    public func loadState() throws -> SyncState {
        guard FileManager.default.fileExists(atPath: statePath.path) else { return SyncState() }
        return try JSONDecoder().decode(SyncState.self, from: Data(contentsOf: statePath))
    }

    private func save(_ state: SyncState) throws {
        try JSONEncoder().encode(state).write(to: statePath, options: .atomic)
    }

    /// Pushes what the server lacks, then pulls and merges what this store lacks.
    @discardableResult
    public func sync(_ store: ReadingStore) async throws -> SyncReport {
        var report = SyncReport()
        var state = try loadState()
        // Push: every page of changes beyond the vector the server is known to hold.
        let target = try store.versionVector()
        var after: EventOrigin?
        while true {
            let page = try store.changes(since: state.pushed, after: after, limit: pushBatch)
            guard let last = page.last else { break }
            after = last.origin
            let own = page.filter { reader == nil || $0.reader == reader }
            if own.isEmpty { continue }
            let records = own.map { ["record": Data(BinaryEventCodec.encodeRecord($0)).base64EncodedString()] }
            let body = try JSONSerialization.data(withJSONObject: ["events": records])
            let data = try await request("POST", "/v1/events", body: body, report: &report)
            let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            report.pushed += own.count
            report.storedByServer += answer?["stored"] as? Int ?? 0
        }
        state.pushed = state.pushed.union(target)
        try save(state)
        // Pull: pages after the cursor, each merged before the cursor moves past it.
        while true {
            var path = "/v1/events?limit=\(pullLimit)"
            if !state.cursor.isEmpty { path += "&after=\(state.cursor)" }
            let data = try await request("GET", path, body: nil, report: &report)
            let page = try JSONDecoder().decode(PullPage.self, from: data)
            var envelopes: [EventEnvelope] = []
            envelopes.reserveCapacity(page.events.count)
            for (index, event) in page.events.enumerated() {
                guard let bytes = Data(base64Encoded: event.record) else {
                    throw SyncError(status: 200, code: "malformed_record", field: "events[\(index)].record", message: "is not base64")
                }
                do {
                    envelopes.append(try BinaryEventCodec.decodeRecord(Array(bytes)))
                } catch {
                    throw SyncError(status: 200, code: "malformed_record", field: "events[\(index)].record.\(error.field)",
                                    message: error.detail)
                }
            }
            if !envelopes.isEmpty {
                let result = try store.merge(envelopes)
                report.merged += result.appended
                report.pulled += envelopes.count
            }
            state.cursor = page.next
            try save(state)
            if !page.more { break }
        }
        return report
    }

    private struct PullPage: Decodable {
        struct Event: Decodable { var reader: String; var record: String }
        var events: [Event]
        var next: String
        var more: Bool
    }

    // MARK: Partners

    /// Creates a single-use invite code (valid `expiresIn` seconds, at most a week).
    public func invite(expiresIn seconds: Int = 86_400) async throws -> PartnerInvite {
        var report = SyncReport()
        let body = try JSONSerialization.data(withJSONObject: ["expiresInSeconds": seconds])
        return try JSONDecoder().decode(PartnerInvite.self, from: try await request("POST", "/v1/invites", body: body, report: &report))
    }

    /// Accepts a partner's invite code; returns the partner's reader ID.
    public func accept(code: String) async throws -> ReaderID {
        var report = SyncReport()
        let body = try JSONSerialization.data(withJSONObject: ["code": code])
        let data = try await request("POST", "/v1/invites/accept", body: body, report: &report)
        guard let text = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["partner"] as? String,
              let partner = ReaderID(uuidString: text) else {
            throw SyncError(status: 200, code: "malformed_answer", field: "partner", message: "is not a reader ID")
        }
        return partner
    }

    /// Ends the partnership with `partner` (nothing new is shared either way).
    public func endPartnership(with partner: ReaderID) async throws {
        var report = SyncReport()
        _ = try await request("DELETE", "/v1/partners/\(partner)", body: nil, report: &report)
    }

    /// The partners' reader IDs.
    public func partners() async throws -> [ReaderID] {
        var report = SyncReport()
        let data = try await request("GET", "/v1/partners", body: nil, report: &report)
        let list = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["partners"] as? [[String: Any]] ?? []
        return list.compactMap { ($0["reader"] as? String).flatMap(ReaderID.init(uuidString:)) }
    }

    /// Replaces what this reader's partners see: group name (`profile`, `progress`, `goals`,
    /// `finishes`, `ratings`, `sentences`, `memos`) → shared.
    public func setShareSettings(_ groups: [String: Bool]) async throws {
        var report = SyncReport()
        let body = try JSONSerialization.data(withJSONObject: groups)
        _ = try await request("PUT", "/v1/share-settings", body: body, report: &report)
    }

    // MARK: HTTP

    private func request(_ method: String, _ path: String, body: Data?, report: inout SyncReport) async throws -> Data {
        var retries = 0
        defer { report.retries += retries }
        return try await Self.send(server: server, token: token, method: method, path: path, body: body,
                                   attempts: attempts, retries: &retries)
    }

    /// One request with retries: transport errors, 5xx and 429 are retried with backoff (every
    /// request of the protocol is idempotent); 4xx is thrown as ``SyncError`` at once.
    private static func send(server: URL, token: String?, method: String, path: String, body: Data?,
                             attempts: Int, retries: inout Int) async throws -> Data {
        guard let url = URL(string: server.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + path) else {
            throw SyncError(status: 0, code: "invalid_url", field: "server", message: "\(server) + \(path) is not a URL")
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = 60
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        var lastError = SyncError(status: 0, code: "transport", field: nil, message: "no attempt made")
        for attempt in 0..<max(1, attempts) {
            if attempt > 0 {
                retries += 1
                try await Task.sleep(nanoseconds: UInt64(min(5.0, 0.1 * pow(2.0, Double(attempt - 1))) * 1e9))
            }
            let data: Data
            let response: URLResponse
            do {
                (data, response) = try await URLSession.shared.data(for: request)
            } catch {
                lastError = SyncError(status: 0, code: "transport", field: nil, message: "\(error)")
                continue
            }
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            if (200..<300).contains(status) { return data }
            let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
            let error = SyncError(status: status, code: json?["error"] as? String ?? "http_\(status)",
                                  field: json?["field"] as? String, message: json?["message"] as? String ?? "")
            if status >= 500 || status == 429 || status == 0 { lastError = error; continue }
            throw error
        }
        throw lastError
    }
}
