import Foundation
import Hummingbird
import NIOCore

/// The context of a request: Hummingbird's core context and the client's address, which the
/// rate limits count by.
///
/// `Sendable`: a value type of Sendable parts.
public struct SyncRequestContext: RequestContext, Sendable {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The client's IP address (`unknown` when the socket has none, e.g. a unix socket).
    public let address: String

    /// Creates the context of a request arriving on `source`'s channel.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        address = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }
}

/// Failed attempts per key (a token, an address) in fixed windows: at most `limit` in a window;
/// past it, attempts under that key are refused until the window ends.
///
/// `@unchecked Sendable`: `entries` is only touched under `lock`.
final class FailureLimiter: @unchecked Sendable {
    private let lock = NSLock()
    private let limit: Int
    private let window: Duration
    private var entries: [String: (start: ContinuousClock.Instant, count: Int)] = [:]

    init(limit: Int, window: Duration) {
        self.limit = limit
        self.window = window
    }

    /// Whole seconds until `key` may try again (at least 1), or nil when it may now.
    func retryAfter(_ key: String) -> Int? {
        lock.withLock {
            let now = ContinuousClock.now
            guard let entry = entries[key], entry.start + window > now, entry.count >= limit else { return nil }
            let left = (entry.start + window) - now
            return max(1, Int(left.components.seconds) + (left.components.attoseconds > 0 ? 1 : 0))
        }
    }

    /// Counts a failure of `key`.
    func recordFailure(_ key: String) {
        lock.withLock {
            let now = ContinuousClock.now
            // Bounded memory: expired windows go when the table grows large.
            if entries.count > 100_000 { entries = entries.filter { $0.value.start + window > now } }
            if let entry = entries[key], entry.start + window > now {
                entries[key] = (entry.start, entry.count + 1)
            } else {
                entries[key] = (now, 1)
            }
        }
    }
}

/// Bytes held at once, all holders together, up to a limit.
///
/// `@unchecked Sendable`: `used` is only touched under `lock`.
final class ByteBudget: @unchecked Sendable {
    private let lock = NSLock()
    private let limit: Int
    private var used = 0

    init(limit: Int) { self.limit = limit }

    /// Takes `count` bytes; false (nothing taken) when that would pass the limit.
    func take(_ count: Int) -> Bool {
        lock.withLock {
            guard used + count <= limit else { return false }
            used += count
            return true
        }
    }

    /// Gives back `count` bytes.
    func release(_ count: Int) {
        guard count > 0 else { return }
        lock.withLock { used -= count }
    }
}

/// Keys seen in the last `lifetime` (bounded: cleared when it grows past 100,000 keys).
///
/// `@unchecked Sendable`: `entries` is only touched under `lock`.
final class RecentSet: @unchecked Sendable {
    private let lock = NSLock()
    private let lifetime: Duration
    private var entries: [UUID: ContinuousClock.Instant] = [:]

    init(lifetime: Duration) { self.lifetime = lifetime }

    /// Whether `key` was inserted within the lifetime.
    func contains(_ key: UUID) -> Bool {
        lock.withLock { entries[key].map { $0 + lifetime > .now } ?? false }
    }

    /// Remembers `key` from now.
    func insert(_ key: UUID) {
        lock.withLock {
            if entries.count > 100_000 { entries.removeAll() }
            entries[key] = .now
        }
    }
}

extension APIError {
    /// 429 `rate_limited`, with `Retry-After: seconds`.
    static func rateLimited(_ seconds: Int, _ message: String) -> APIError {
        APIError(.tooManyRequests, "rate_limited", retryAfter: seconds, "\(message); retry after \(seconds) s")
    }
}
