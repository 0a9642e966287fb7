import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ReadingEvents
import SyncWire

/// The HTTP protocol of the sync server (see `openapi.yaml`): JSON over HTTP, bearer tokens, every
/// request scoped to the token's reader.
///
/// `Sendable`: holds Sendable values.
public struct SyncRoutes: Sendable {
    let store: any SyncStore
    let hub: LiveHub
    let limits: ServerLimits
    let logger: Logger
    /// Failed invite redemptions by device and by address; failed logins by address.
    let inviteFailuresByToken: FailureLimiter
    let inviteFailuresByAddress: FailureLimiter
    let failedLoginsByAddress: FailureLimiter
    /// First registrations (no token) by address.
    let registrationsByAddress: FailureLimiter
    /// Failed logins by address and the reader the token names (`address|reader`).
    let failedLoginsByAddressAndReader: FailureLimiter
    /// Readers this process verified a token of in the last ten minutes.
    let verifiedReaders = RecentSet(lifetime: .seconds(600))
    /// The bytes of request bodies held in memory at once, all requests together.
    let bodyMemory: ByteBudget

    /// Creates the routes.
    public init(store: any SyncStore, hub: LiveHub, limits: ServerLimits, logger: Logger) {
        self.store = store
        self.hub = hub
        self.limits = limits
        self.logger = logger
        inviteFailuresByToken = FailureLimiter(limit: limits.inviteFailuresPerToken, window: limits.rateWindow)
        inviteFailuresByAddress = FailureLimiter(limit: limits.inviteFailuresPerAddress, window: limits.rateWindow)
        failedLoginsByAddress = FailureLimiter(limit: limits.failedLoginsPerAddress, window: limits.rateWindow)
        bodyMemory = ByteBudget(limit: limits.maxBodyMemory)
        registrationsByAddress = FailureLimiter(limit: limits.registrationsPerAddress, window: limits.rateWindow)
        failedLoginsByAddressAndReader = FailureLimiter(limit: limits.failedLoginsPerAddressAndReader, window: limits.rateWindow)
    }

    /// Adds every route to `router`.
    public func add(to router: Router<SyncRequestContext>) {
        router.add(middleware: ErrorMapping(logger: logger))
        router.get("/openapi.yaml") { _, _ in
            guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml"),
                  let data = try? Data(contentsOf: url) else { throw APIError.notFound }
            return Response(status: .ok, headers: [.contentType: "application/yaml"],
                            body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        router.get("/health") { _, _ in
            // 503 when the primary does not answer; else each database's state.
            try json(try await store.health())
        }
        router.post("/v1/devices") { request, context in try await register(request, context) }
        router.get("/v1/devices") { request, context in
            let device = try await authenticate(request, context)
            return try json(DeviceList(devices: try await store.devices(of: device.reader)))
        }
        router.delete("/v1/devices/{id}") { request, context in
            let device = try await authenticate(request, context)
            guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)),
                  try await store.revoke(device: id, of: device.reader) else { throw APIError.notFound }
            return Response(status: .noContent)
        }
        router.post("/v1/events") { request, context in try await push(request, context) }
        router.get("/v1/events") { request, context in try await pull(request, context) }
        router.get("/v1/stream") { request, context in try await stream(request, context) }
        router.post("/v1/invites") { request, context in
            let device = try await authenticate(request, context)
            // The body is optional (no body: the defaults).
            let body = try await decode(InviteRequest.self, request, empty: InviteRequest(expiresInSeconds: nil))
            let seconds = body.expiresInSeconds ?? 86_400
            guard (1...604_800).contains(seconds) else {
                throw APIError.badRequest("invalid_field", field: "expiresInSeconds", "must be 1 ... 604800 seconds")
            }
            return try json(try await store.createInvite(reader: device.reader, seconds: seconds, liveLimit: limits.maxLiveInvites),
                            status: .created)
        }
        router.post("/v1/invites/accept") { request, context in try await acceptInvite(request, context) }
        router.get("/v1/partners") { request, context in
            let device = try await authenticate(request, context)
            return try json(PartnerList(partners: try await store.partners(of: device.reader)))
        }
        router.delete("/v1/partners/{reader}") { request, context in
            let device = try await authenticate(request, context)
            guard let partner = context.parameters.get("reader").flatMap(UUID.init(uuidString:)),
                  try await store.endPartnership(reader: device.reader, partner: partner) else { throw APIError.notFound }
            return Response(status: .noContent)
        }
        router.get("/v1/share-settings") { request, context in
            let device = try await authenticate(request, context)
            return try json(try await store.shareSettings(of: device.reader))
        }
        router.put("/v1/share-settings") { request, context in
            let device = try await authenticate(request, context)
            let settings = try await decode(ShareSettings.self, request)
            try await store.setShareSettings(settings, of: device.reader)
            return try json(settings)
        }
    }

    // MARK: Handlers

    /// The client's address: the socket's peer, or, when that peer is a trusted proxy
    /// (``ServerLimits/trustedProxies``), the last address of `X-Forwarded-For` that is not one.
    func clientAddress(_ request: Request, _ context: SyncRequestContext) -> String {
        guard limits.trustedProxies.contains(context.address), let name = HTTPField.Name("X-Forwarded-For") else { return context.address }
        let hops = request.headers[values: name].joined(separator: ",")
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return hops.reversed().first { !limits.trustedProxies.contains($0) } ?? context.address
    }

    /// The device of the request's bearer token. Failed logins count by what the token claims
    /// first (its reader, per address) and by address: an address past its budget is answered
    /// 429, without asking the database, for a token this process has not verified recently,
    /// unless the token's reader had a token verified here in the last ten minutes and that
    /// reader's own budget at this address is not spent (so strangers behind one address do not
    /// lock a known reader's devices out). Each failed login and each refusal is logged with the
    /// address.
    func authenticate(_ request: Request, _ context: SyncRequestContext) async throws -> SyncDevice {
        guard let header = request.headers[.authorization] else {
            throw APIError.unauthorized("a bearer token is required")
        }
        let token = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)) : ""
        let address = clientAddress(request, context)
        let claimed = Tokens.parse(token)?.reader
        let readerKey = address + "|" + (claimed?.lowercased ?? "-")
        if let seconds = failedLoginsByAddressAndReader.retryAfter(readerKey) ?? failedLoginsByAddress.retryAfter(address) {
            if let device = store.cachedDevice(token: token) { return device }
            let known = claimed.map(verifiedReaders.contains) ?? false
            if !known || failedLoginsByAddressAndReader.retryAfter(readerKey) != nil {
                logger.warning("failed login refused (rate limited): address \(address)")
                throw APIError.rateLimited(seconds, "too many failed logins from this address")
            }
        }
        // A token is a UUID, a dot and 43 characters: a longer header is not one (no look-up).
        guard token.utf8.count <= limits.maxTokenBytes, let device = try await store.authenticate(token: token) else {
            failedLoginsByAddress.recordFailure(address)
            failedLoginsByAddressAndReader.recordFailure(readerKey)
            logger.warning("failed login: address \(address)")
            throw APIError.unauthorized("the token is unknown, malformed or revoked")
        }
        verifiedReaders.insert(device.reader)
        return device
    }

    /// Redeems an invite code. Failed redemptions count per device and per address; past either
    /// budget the request is 429 whatever the code. Each failure and each refusal is logged.
    func acceptInvite(_ request: Request, _ context: SyncRequestContext) async throws -> Response {
        let device = try await authenticate(request, context)
        let body = try await decode(AcceptRequest.self, request)
        let tokenKey = device.device.lowercased
        let address = clientAddress(request, context)
        let who = "device \(tokenKey) of reader \(device.reader.lowercased), address \(address)"
        if let seconds = inviteFailuresByToken.retryAfter(tokenKey) ?? inviteFailuresByAddress.retryAfter(address) {
            logger.warning("invite attempt refused (rate limited): \(who)")
            throw APIError.rateLimited(seconds, "too many failed invite codes")
        }
        guard body.code.utf8.count <= limits.maxCodeBytes else {
            throw APIError.badRequest("invalid_field", field: "code", "must be at most \(limits.maxCodeBytes) bytes (got \(body.code.utf8.count))")
        }
        do {
            let partner = try await store.acceptInvite(code: body.code, reader: device.reader, partnerLimit: limits.maxPartners)
            return try json(AcceptAnswer(partner: partner.uuidString.lowercased()))
        } catch let error as APIError where error.field == "code" {
            inviteFailuresByToken.recordFailure(tokenKey)
            inviteFailuresByAddress.recordFailure(address)
            logger.warning("invite attempt refused (\(error.code)): \(who)")
            throw error
        }
    }

    func register(_ request: Request, _ context: SyncRequestContext) async throws -> Response {
        // A request with a token is authenticated before its body is read; one without (a first
        // registration, anyone) may send a small body only.
        let authenticated = request.headers[.authorization] != nil ? try await authenticate(request, context) : nil
        let body = try await decode(RegisterRequest.self, request,
                                    limit: authenticated == nil ? limits.maxAnonymousBodyBytes : limits.maxBodyBytes)
        // Bytes, not characters: one grapheme may hold any number of combining scalars. A NUL
        // cannot be stored in PostgreSQL text (it would surface as a database error).
        guard (1...limits.maxNameBytes).contains(body.name.utf8.count) else {
            throw APIError.badRequest("invalid_field", field: "name", "must be 1 ... \(limits.maxNameBytes) UTF-8 bytes (got \(body.name.utf8.count))")
        }
        guard !body.name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw APIError.badRequest("invalid_field", field: "name", "must not hold control characters (NUL, line breaks, ...)")
        }
        // Format characters (bidirectional overrides, zero-width spaces) and line or paragraph
        // separators make a name show as another; the zero-width (non-)joiners of emoji and
        // scripts stay allowed.
        guard !body.name.unicodeScalars.contains(where: Self.isRefusedInName) else {
            throw APIError.badRequest("invalid_field", field: "name",
                                      "must not hold format characters (bidirectional overrides, zero-width spaces) or line and paragraph separators")
        }
        if let device = authenticated {
            if let reader = body.reader, reader != device.reader {
                throw APIError(.forbidden, "forbidden_reader", field: "reader",
                               "a token registers devices of its own reader only")
            }
            return try json(try await store.registerDevice(for: device, name: body.name, limit: limits.maxDevicesPerReader),
                            status: .created)
        }
        guard let reader = body.reader else {
            throw APIError.badRequest("missing_field", field: "reader", "the first device of a reader names the reader's UUID")
        }
        // Registration needs no token: first registrations count per address.
        let address = clientAddress(request, context)
        if let seconds = registrationsByAddress.retryAfter(address) {
            logger.warning("registration refused (rate limited): address \(address)")
            throw APIError.rateLimited(seconds, "too many registrations from this address")
        }
        registrationsByAddress.recordFailure(address)
        return try json(try await store.registerFirstDevice(reader: reader, name: body.name), status: .created)
    }

    /// A scalar a device name may not hold besides control characters: a format character
    /// (category Cf) other than the zero-width joiner and non-joiner, or a line or paragraph
    /// separator (U+2028, U+2029).
    static func isRefusedInName(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .format: return scalar.value != 0x200D && scalar.value != 0x200C
        case .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    func push(_ request: Request, _ context: SyncRequestContext) async throws -> Response {
        let device = try await authenticate(request, context)
        let body = try await decode(PushRequest.self, request)
        guard body.events.count <= limits.maxBatchEvents else {
            throw APIError(.contentTooLarge, "batch_too_large", field: "events",
                           "a batch holds at most \(limits.maxBatchEvents) events (got \(body.events.count))")
        }
        var incoming: [IncomingEvent] = []
        incoming.reserveCapacity(body.events.count)
        struct OriginKey: Hashable { let replica: UUID; let sequence: UInt64 }
        var origins: [OriginKey: (index: Int, eventID: UUID)] = [:]
        var facts: [UUID: ByteBuffer] = [:]
        for (index, pushed) in body.events.enumerated() {
            let field = "events[\(index)].record"
            guard let bytes = Data(base64Encoded: pushed.record) else {
                throw APIError.badRequest("malformed_record", field: field, "is not base64")
            }
            let envelope: EventEnvelope
            do {
                envelope = try BinaryEventCodec.decodeRecord(Array(bytes))
            } catch {
                throw APIError.badRequest("malformed_record", field: "\(field).\(error.field)", error.detail)
            }
            guard envelope.reader.uuid == device.reader else {
                throw APIError(.forbidden, "forbidden_reader", field: "\(field).reader",
                               "the event belongs to reader \(envelope.reader), not to the token's reader")
            }
            // What every receiving device would refuse is refused here, by the same check, so
            // that no stored record can stop another device's (or a partner's) sync.
            do { try envelope.validateReplicated() } catch {
                throw APIError(.badRequest, "invalid_record", field: "\(field).\(error.field)", rule: error.rule.rawValue,
                               "\(error.detail) [rule: \(error.rule.rawValue)]")
            }
            // Sequences are stored as PostgreSQL bigint: one above Int64.max would be clamped and
            // collide with another (issue 39).
            if let origin = envelope.origin, origin.sequence > UInt64(Int64.max) {
                throw APIError(.badRequest, "invalid_record", field: "\(field).origin.sequence", rule: ValidationRule.outOfRange.rawValue,
                               "a replica's sequence is at most \(Int64.max) [rule: \(ValidationRule.outOfRange.rawValue)]")
            }
            if let origin = envelope.origin {
                let key = OriginKey(replica: origin.replica.uuid, sequence: origin.sequence)
                if let earlier = origins.updateValue((index, envelope.eventID.uuid), forKey: key), earlier.eventID != envelope.eventID.uuid {
                    throw APIError(.conflict, "origin_taken", field: "\(field).origin.sequence", rule: ValidationRule.duplicateID.rawValue,
                                   "replica \(origin.replica)'s sequence \(origin.sequence) also names events[\(earlier.index)], another event")
                }
            }
            let event = IncomingEvent(
                index: index, eventID: envelope.eventID.uuid, replica: envelope.origin?.replica.uuid,
                sequence: Int64(clamping: envelope.origin?.sequence ?? 0), stamp: Int64(clamping: envelope.origin?.stamp ?? 0),
                occurredAt: envelope.occurredAt.date, type: envelope.type.tag, group: ShareGroup.of(envelope.event),
                record: ByteBuffer(bytes: bytes), fact: ByteBuffer(bytes: factDigest(of: envelope)))
            // Copies of one event in one batch (its own and an alias) carry one fact.
            if let earlier = facts.updateValue(event.fact, forKey: event.eventID), earlier != event.fact {
                throw APIError.otherFact(event)
            }
            incoming.append(event)
        }
        // `pull=1`: the answer also carries the page a pull would answer now (one request per
        // device cycle). Its parameters are checked before anything is stored.
        let pull = request.uri.queryParameters.get("pull")
        guard pull == nil || pull == "1" else { throw APIError.badRequest("invalid_field", field: "pull", "must be 1 or absent") }
        // `after` and `limit` are checked even without `pull=1` (the contract bounds them).
        let parameters = try pullParameters(request)
        let pullAfter = pull == "1" ? parameters : nil
        var result = try await store.push(reader: device.reader, events: incoming)
        if let (cursor, limit) = pullAfter {
            // The push is stored. When the database cannot answer the page now (503: no
            // connection in time, a statement past its timeout, a broken connection), the answer
            // goes without it and the device pulls apart (as from a server without `pull=1`).
            // Before (issue 38), the whole request was answered 503: the device took its stored
            // push for refused and sent it again, and under load the pages of stored pushes were
            // what most often waited past the acquire timeout.
            do {
                result.page = try await store.pull(reader: device.reader, after: cursor, limit: limit)
            } catch let error as any HTTPResponseError where error.status != .serviceUnavailable {
                throw error
            } catch let error as CancellationError {
                throw error
            } catch {
                logger.warning("a push of \(incoming.count) events was stored, its pull page was not read (\(error)): answered without the page")
            }
        }
        return try json(result)
    }

    /// The cursor (`after`) and page size (`limit`) of a pull, checked.
    func pullParameters(_ request: Request) throws -> (PullCursor, Int) {
        let query = request.uri.queryParameters
        let after = query.get("after") ?? ""
        guard after.utf8.count <= limits.maxCursorBytes else {
            throw APIError.badRequest("invalid_field", field: "after", "must be at most \(limits.maxCursorBytes) bytes (got \(after.utf8.count))")
        }
        guard let cursor = PullCursor(encoded: after) else {
            throw APIError.badRequest("invalid_field", field: "after", "is not a cursor this server returned as next")
        }
        var limit = limits.defaultPullLimit
        if let text = query.get("limit") {
            guard let value = Int(text), (1...limits.maxPullLimit).contains(value) else {
                throw APIError.badRequest("invalid_field", field: "limit", "must be an integer 1 ... \(limits.maxPullLimit)")
            }
            limit = value
        }
        return (cursor, limit)
    }

    func pull(_ request: Request, _ context: SyncRequestContext) async throws -> Response {
        let device = try await authenticate(request, context)
        let (cursor, limit) = try pullParameters(request)
        return try json(try await store.pull(reader: device.reader, after: cursor, limit: limit))
    }

    func stream(_ request: Request, _ context: SyncRequestContext) async throws -> Response {
        let device = try await authenticate(request, context)
        let (id, frames) = try await hub.subscribe(reader: device.reader, device: device.device, address: clientAddress(request, context))
        let hub = hub
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: ResponseBody { writer in
                do {
                    for await frame in frames { try await writer.write(ByteBuffer(string: frame)) }
                } catch {
                    await hub.unsubscribe(id)
                    throw error
                }
                await hub.unsubscribe(id)
                try await writer.finish(nil)
            })
    }

    // MARK: JSON

    /// The JSON body as `T`; an empty body is `empty` when given (an optional body), else 400.
    /// At most `limit` bytes (``ServerLimits/maxBodyBytes`` when nil): a larger declared
    /// `Content-Length` is 413 before any of the body is read, and the bytes held count against
    /// the process's ``ServerLimits/maxBodyMemory`` (503 past it), so that memory per connection
    /// and in all is bounded before a body arrives.
    func decode<T: Decodable>(_ type: T.Type, _ request: Request, empty: T? = nil, limit: Int? = nil) async throws -> T {
        let limit = limit ?? limits.maxBodyBytes
        func tooLarge(_ received: Int) -> APIError {
            APIError(.contentTooLarge, "body_too_large", field: "body",
                     "a request body here holds at most \(limit) bytes (got \(received) or more); send fewer events per request")
        }
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit { throw tooLarge(declared) }
        // A body sent without a length is read to its end even when it is too large (up to 16
        // times the limit), so that the client, still sending, reads the 413 and its JSON body
        // rather than a connection reset.
        var buffer = ByteBuffer()
        var received = 0
        var held = 0
        defer { bodyMemory.release(held) }
        for try await chunk in request.body {
            received += chunk.readableBytes
            if received <= limit {
                guard bodyMemory.take(chunk.readableBytes) else {
                    throw APIError(.serviceUnavailable, "busy", field: "body", retryAfter: 1,
                                   "the server holds as many request bodies as it may; retry the request")
                }
                held += chunk.readableBytes
                buffer.writeImmutableBuffer(chunk)
            } else if received > 16 * limit {
                break
            }
        }
        guard received <= limit else { throw tooLarge(received) }
        if received == 0, let empty { return empty }
        // A key twice in one object: JSONDecoder keeps the first value where most parsers keep
        // the last, so two readers of one body could disagree; refused.
        if let duplicate = JSONKeys.firstDuplicate(in: Array(buffer.readableBytesView)) {
            throw APIError.badRequest("duplicate_key", field: duplicate, "a key appears twice in one JSON object")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let DecodingError.keyNotFound(key, context) {
            throw APIError.badRequest("missing_field", field: path(context.codingPath + [key]), "is required")
        } catch let DecodingError.typeMismatch(_, context) {
            throw APIError.badRequest("invalid_field", field: path(context.codingPath), context.debugDescription)
        } catch let DecodingError.valueNotFound(_, context) {
            throw APIError.badRequest("invalid_field", field: path(context.codingPath), "must not be null")
        } catch let DecodingError.dataCorrupted(context) {
            throw APIError.badRequest("invalid_field", field: context.codingPath.isEmpty ? "body" : path(context.codingPath),
                                      context.debugDescription)
        } catch {
            throw APIError.badRequest("malformed_json", field: "body", "is not JSON")
        }
    }

    private func path(_ keys: [any CodingKey]) -> String {
        keys.reduce("") { text, key in
            if let index = key.intValue { return text + "[\(index)]" }
            return text.isEmpty ? key.stringValue : text + "." + key.stringValue
        }
    }
}

func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .iso8601
    encoder.outputFormatting = [.sortedKeys]
    let data = try encoder.encode(value)
    return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
}

/// Limits of requests.
///
/// `Sendable`: a value type of integers.
public struct ServerLimits: Sendable {
    /// Events per push (more: 413).
    public var maxBatchEvents = 1000
    /// Bytes per request body (more: 413).
    public var maxBodyBytes = 4 * 1024 * 1024
    /// UTF-8 bytes of a device name (100 Hangul syllables).
    public var maxNameBytes = 300
    /// Events per pull page when `limit` is absent.
    public var defaultPullLimit = 500
    /// The largest `limit` of a pull.
    public var maxPullLimit = 1000
    /// Bytes of an invite code as typed (codes are 10 characters; dashes and spaces are allowed).
    public var maxCodeBytes = 64
    /// Bytes of a pull cursor (`after`). A cursor the server writes holds the reader and its
    /// partners now (never former partners), at most ``PullCursor/maxEncodedBytesPerReader`` (52)
    /// bytes each: about 5.3 KB at ``maxPartners``; the text form of earlier servers, about 60 to
    /// 190 bytes a reader.
    public var maxCursorBytes = 16 * 1024
    /// Partners of a reader (more: 409 `partner_limit` when an invite is accepted). Bounds the
    /// pull cursor and the pull's one statement.
    public var maxPartners = 100
    /// Bytes of a bearer token (a token is 80).
    public var maxTokenBytes = 256
    /// Devices of a reader that are not revoked (more: 409 `device_limit`).
    public var maxDevicesPerReader = 100
    /// Failed invite codes per device in ``rateWindow`` (more: 429).
    public var inviteFailuresPerToken = 10
    /// Failed invite codes per client address in ``rateWindow`` (more: 429).
    public var inviteFailuresPerAddress = 30
    /// Failed logins (unknown tokens) per client address in ``rateWindow`` (more: 429).
    public var failedLoginsPerAddress = 60
    /// Failed logins per client address and claimed reader in ``rateWindow``.
    public var failedLoginsPerAddressAndReader = 10
    /// Addresses of proxies (load balancers) whose `X-Forwarded-For` names the client; from
    /// any other peer the header is ignored.
    public var trustedProxies: Set<String> = []
    /// First registrations (without a token) per client address in ``rateWindow`` (more: 429).
    public var registrationsPerAddress = 30
    /// Invites of a reader neither used nor expired (more: 409 `invite_limit`).
    public var maxLiveInvites = 20
    /// Bytes of an anonymous request body (a first registration, which needs no token; more: 413).
    public var maxAnonymousBodyBytes = 8 * 1024
    /// Bytes of request bodies held in memory at once, all requests together (more: 503 `busy`).
    public var maxBodyMemory = 256 * 1024 * 1024
    /// The window of the rate limits.
    public var rateWindow: Duration = .seconds(60)
    /// How long a request waits for a database connection while the pool hands none out (the
    /// database is down, frozen or every connection is stuck) before it is answered 503.
    public var acquireTimeout: Duration = .seconds(2)
    /// How long a request waits its turn for a database connection while the pool keeps handing
    /// connections out (a busy database) before it is answered 503 all the same.
    public var maxQueueWait: Duration = .seconds(30)
    /// The defaults.
    public init() {}
}

/// Turns failures that are not refusals (the database is down or restarting, a connection broke)
/// into 503 with `Retry-After`, logged: the client's retry is always safe.
struct ErrorMapping<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError {
            throw error
        } catch {
            logger.error("request failed: \(request.method) \(request.uri.path): \(String(reflecting: error))")
            throw APIError.unavailable
        }
    }
}
