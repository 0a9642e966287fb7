import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

/// The live stream's fan-out in one server process: devices subscribed by server-sent events, and
/// for each the readers whose new events concern it (its own reader, and partners for the groups
/// they share). Fed by ``LiveListener`` from PostgreSQL's NOTIFY, so a push through any server
/// process reaches subscribers of every process.
///
/// `Sendable`: an actor.
public actor LiveHub {
    private struct Subscriber {
        let reader: UUID
        /// The subscribed device: its streams end when it is revoked.
        let device: UUID
        /// The client's address.
        let address: String
        /// The order of subscription (the oldest is ended first past a cap).
        let order: UInt64
        /// Source reader → the groups it shares with this subscriber (nil: everything, own reader).
        var sources: [UUID: Set<String>?]
        let continuation: AsyncStream<String>.Continuation
    }

    private var subscribers: [UUID: Subscriber] = [:]
    private var nextOrder: UInt64 = 0
    private let store: any SyncStore
    private let limits: StreamLimits

    /// Creates a hub reading partner sources from `store`, with at most `limits` open streams per
    /// device, reader and client address.
    public init(store: any SyncStore, limits: StreamLimits = StreamLimits()) {
        self.store = store
        self.limits = limits
    }

    /// Subscribes `device` of `reader` (from `address`); the stream yields server-sent-event
    /// frames and ends when the server shuts down, the device is revoked, or newer streams of the
    /// same device, reader or address pass their cap (``StreamLimits``: the oldest ends, and its
    /// client reconnects). Call ``unsubscribe(_:)`` with the returned ID when the client leaves.
    public func subscribe(reader: UUID, device: UUID, address: String = "unknown") async throws -> (UUID, AsyncStream<String>) {
        let sources = try await sourceMap(reader)
        let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        nextOrder += 1
        subscribers[id] = Subscriber(reader: reader, device: device, address: address, order: nextOrder, sources: sources,
                                     continuation: continuation)
        continuation.yield("event: ready\ndata: {}\n\n")
        endOldest(limits.perDevice) { $0.device == device }
        endOldest(limits.perReader) { $0.reader == reader }
        endOldest(limits.perAddress) { $0.address == address }
        return (id, stream)
    }

    /// Ends the oldest streams that match while more than `limit` match.
    private func endOldest(_ limit: Int, where matches: (Subscriber) -> Bool) {
        let matching = subscribers.filter { matches($0.value) }.sorted { $0.value.order < $1.value.order }
        guard matching.count > limit else { return }
        for (id, subscriber) in matching.prefix(matching.count - limit) {
            subscribers.removeValue(forKey: id)
            subscriber.continuation.finish()
        }
    }

    /// Removes a subscriber.
    public func unsubscribe(_ id: UUID) {
        subscribers.removeValue(forKey: id)?.continuation.finish()
    }

    /// The number of open streams.
    public var count: Int { subscribers.count }

    private func sourceMap(_ reader: UUID) async throws -> [UUID: Set<String>?] {
        var map: [UUID: Set<String>?] = [:]
        // `updateValue`, not a subscript assignment: assigning nil (the reader's own entry: every
        // group) through the subscript would remove the entry instead of storing it.
        for (source, groups) in try await store.sources(of: reader) { map.updateValue(groups.map(Set.init), forKey: source) }
        return map
    }

    /// Handles one NOTIFY payload of ``PostgresSyncStore/channel`` (`e:` new events, `p:` partners or
    /// settings changed, `r:<reader>:<device>` a device revoked).
    func handle(payload: String) async {
        let parts = payload.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2 else { return }
        switch parts[0] {
        case "e":
            guard let reader = UUID(uuidString: String(parts[1])) else { return }
            let groups = Set((parts.count > 2 ? parts[2] : "").split(separator: ",").map(String.init))
            eventsArrived(reader: reader, groups: groups)
        case "p":
            let readers = Set(parts[1].split(separator: ",").compactMap { UUID(uuidString: String($0)) })
            await partnersChanged(readers)
        case "r":
            if parts.count > 2, let device = UUID(uuidString: String(parts[2])) { revoked(device) }
        default:
            return
        }
    }

    private func eventsArrived(reader: UUID, groups: Set<String>) {
        for subscriber in subscribers.values {
            guard let entry = subscriber.sources[reader] else { continue }
            if let shared = entry, shared.isDisjoint(with: groups) { continue }
            subscriber.continuation.yield(Self.changed(reader))
        }
    }

    /// A device was revoked: it is no longer trusted from the token cache, and its open streams end.
    private func revoked(_ device: UUID) {
        store.tokens.remove(device: device)
        for (id, subscriber) in subscribers where subscriber.device == device {
            subscribers.removeValue(forKey: id)
            subscriber.continuation.finish()
        }
    }

    private func partnersChanged(_ readers: Set<UUID>) async {
        let affected = subscribers.filter { id, subscriber in
            readers.contains(subscriber.reader) || subscriber.sources.keys.contains(where: readers.contains)
        }
        for (id, subscriber) in affected {
            guard let sources = try? await sourceMap(subscriber.reader) else { continue }
            subscribers[id]?.sources = sources
            subscriber.continuation.yield(Self.changed(nil))
        }
    }

    /// Tells every subscriber to pull (after the listener reconnected and may have missed notifications).
    func resyncAll() {
        store.tokens.removeAll()
        for subscriber in subscribers.values { subscriber.continuation.yield(Self.changed(nil)) }
    }

    /// A comment frame that keeps idle connections open and detects departed clients.
    func keepalive() {
        for subscriber in subscribers.values { subscriber.continuation.yield(": keepalive\n\n") }
    }

    /// Ends every stream (server shutdown).
    func finishAll() {
        for subscriber in subscribers.values { subscriber.continuation.finish() }
        subscribers.removeAll()
    }

    static func changed(_ reader: UUID?) -> String {
        "event: changed\ndata: {\"reader\":\(reader.map { "\"\($0.uuidString.lowercased())\"" } ?? "null")}\n\n"
    }
}

/// Keeps one connection LISTENing on ``PostgresSyncStore/channel`` and feeds ``LiveHub``; reconnects
/// after PostgreSQL restarts (then tells every subscriber to pull, since notifications sent
/// meanwhile are lost), and sends keepalives.
///
/// `Sendable`: holds Sendable values.
public struct LiveListener: Service {
    let store: PostgresSyncStore
    let hub: LiveHub
    let logger: Logger

    /// Creates the listener.
    public init(store: PostgresSyncStore, hub: LiveHub, logger: Logger) {
        self.store = store
        self.hub = hub
        self.logger = logger
    }

    /// Listens until graceful shutdown, then ends every stream.
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await cancelWhenGracefulShutdown { await listen() }
            }
            group.addTask {
                try? await cancelWhenGracefulShutdown {
                    while !Task.isCancelled {
                        try await Task.sleep(for: .seconds(15))
                        await hub.keepalive()
                    }
                }
            }
            await group.waitForAll()
        }
        await hub.finishAll()
    }

    private func listen() async {
        var connectedBefore = false
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    try await connection.listen(on: PostgresSyncStore.channel) { notifications in
                        if connectedBefore { await hub.resyncAll() }
                        connectedBefore = true
                        for try await notification in notifications {
                            await hub.handle(payload: notification.payload)
                        }
                    }
                }
            } catch {
                // Revocations may be missed until the listener is back: trust no cached token.
                store.tokens.removeAll()
                if Task.isCancelled { return }
                logger.warning("live listener lost its connection, retrying: \(String(reflecting: error))")
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }
}

/// Open event streams at most per device, per reader and per client address in one server
/// process; past a cap the oldest stream of that device, reader or address ends (its client
/// reconnects), so that one token cannot hold every connection.
///
/// `Sendable`: a value type of integers.
public struct StreamLimits: Sendable {
    /// Streams of one device (`--max-streams-per-device`).
    public var perDevice = 4
    /// Streams of one reader, all devices together (`--max-streams-per-reader`).
    public var perReader = 32
    /// Streams from one client address (`--max-streams-per-address`; many readers may share one
    /// address behind a NAT).
    public var perAddress = 1024
    /// The defaults.
    public init() {}
}
