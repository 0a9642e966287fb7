import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import SyncWire

/// Time limits of a connection and the cap on open connections: what keeps the server answering
/// when clients open connections and send nothing, or a request in part, and keep it open.
///
/// `Sendable`: a value type.
public struct ConnectionPolicy: Sendable {
    /// From the connection's start, or the end of the previous answer, to the end of a request's
    /// header (the first request: a half-sent header is cut after this).
    public var headerTimeout: Duration = .seconds(10)
    /// From the end of a request's header to the end of its body.
    public var bodyTimeout: Duration = .seconds(60)
    /// A kept-alive connection with no request after an answer is closed after this.
    public var idleTimeout: Duration = .seconds(60)
    /// Open connections at most. The server lowers it to its open-file limit less the database
    /// pool and a margin (``effectiveMaxConnections(poolSize:)``): past the cap, a new
    /// connection evicts the oldest one that waits on its client (idle, a header or a body still
    /// arriving, an open event stream), or is closed when every connection is serving a request.
    public var maxConnections = 4096

    /// The defaults.
    public init() {}

    /// ``maxConnections``, bounded by the soft open-file limit less `poolSize` and 64 descriptors
    /// for the rest of the process (never below 8).
    public func effectiveMaxConnections(poolSize: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(Int32.max) else { return maxConnections }
        let files = Int(clamping: limit.rlim_cur)
        return max(8, min(maxConnections, files - poolSize - 64))
    }
}

/// The open connections of one server: which wait on their client (idle, a header or a body
/// still arriving, an event stream open), and since when, so that a connection over the cap
/// evicts the oldest of them.
///
/// `@unchecked Sendable`: every property is only touched under `lock`.
final class ConnectionRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private let limit: Int
    private var open = 0
    private var next: UInt64 = 0
    /// Waiting connections by identity: the channel and when it started waiting (an order, not a time).
    private var waiting: [ObjectIdentifier: (channel: any Channel, since: UInt64)] = [:]

    init(limit: Int) { self.limit = limit }

    /// Counts a new connection (waiting); returns the connection to close to make room (the
    /// oldest waiting one, possibly `channel` itself when every other one serves a request).
    func admit(_ channel: any Channel) -> (any Channel)? {
        lock.withLock {
            open += 1
            next += 1
            waiting[ObjectIdentifier(channel)] = (channel, next)
            guard open > limit else { return nil }
            let victim = waiting.min { $0.value.since < $1.value.since }!
            waiting[victim.key] = nil
            return victim.value.channel
        }
    }

    /// The connection now waits on its client (`true`: evictable; its place in the eviction order
    /// is kept when it was waiting already) or serves a request (`false`).
    func setWaiting(_ channel: any Channel, _ isWaiting: Bool) {
        lock.withLock {
            if isWaiting {
                guard waiting[ObjectIdentifier(channel)] == nil else { return }
                next += 1
                waiting[ObjectIdentifier(channel)] = (channel, next)
            } else {
                waiting[ObjectIdentifier(channel)] = nil
            }
        }
    }

    /// The connection closed.
    func remove(_ channel: any Channel) {
        lock.withLock {
            open -= 1
            waiting[ObjectIdentifier(channel)] = nil
        }
    }
}

/// One connection's guard, after the HTTP decoder: admits it under the cap and cuts it when the
/// header, the body or an idle spell lasts too long. While a request is served (the handler runs,
/// an event stream is open) no timer runs. A connection is evictable (``ConnectionRegistry``)
/// while it waits on its client: until its request's body has arrived, while idle, and while it
/// carries an event stream (whose client reconnects); only a request being answered is not. A request the decoder cannot parse (bad bytes, a
/// header over 80 KiB) gets Hummingbird's 400 with the JSON error body instead of an empty one.
///
/// Not `Sendable`: a channel handler, used on its channel's event loop only.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let policy: ConnectionPolicy
    private let registry: ConnectionRegistry
    private var admitted = false
    private var timer: Scheduled<Void>?
    private var parserFailed = false

    init(policy: ConnectionPolicy, registry: ConnectionRegistry) {
        self.policy = policy
        self.registry = registry
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        if admitted { registry.remove(context.channel) }
        admitted = false
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            // Still waiting on the client until the body has arrived (evictable: a slow body
            // cannot hold the connection against everyone else).
            registry.setWaiting(context.channel, true)
            arm(context, policy.bodyTimeout)
        case .body:
            break
        case .end:
            registry.setWaiting(context.channel, false)
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError { parserFailed = true }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where parserFailed && head.status == .badRequest:
            // Hummingbird's answer to a parse error (then it closes): the same, with a body.
            let error = ErrorBody(error: "malformed_request", field: "request", rule: nil,
                                      message: "the request line or header is not HTTP/1.1 or is over 80 KiB")
            let body = ByteBuffer(bytes: (try? JSONEncoder().encode(error)) ?? Data())
            head.headerFields[.contentType] = "application/json"
            head.headerFields[.contentLength] = String(body.readableBytes)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(body)), promise: promise)
            return
        case .head(let head) where head.headerFields[.contentType] == "text/event-stream":
            // An event stream waits on nothing but notices: evictable (its client reconnects).
            registry.setWaiting(context.channel, true)
        case .end:
            registry.setWaiting(context.channel, true)
            arm(context, policy.idleTimeout)
        case .head, .body:
            break
        }
        context.write(data, promise: promise)
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard !admitted else { return }
        admitted = true
        if let victim = registry.admit(context.channel) { victim.close(promise: nil) }
        arm(context, policy.headerTimeout)
    }

    private func arm(_ context: ChannelHandlerContext, _ duration: Duration) {
        timer?.cancel()
        let channel = context.channel
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { channel.close(promise: nil) }
    }
}
