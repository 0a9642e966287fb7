import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to the server on loopback, for clients that misbehave: a request sent in
/// part and then held, nothing sent at all. Closed on `deinit`.
///
/// `@unchecked Sendable`: the descriptor is a constant; each test uses a connection from one task.
final class RawConnection: @unchecked Sendable {
    let descriptor: Int32

    /// Connects to 127.0.0.1:`port`; reads wait at most `readTimeout` seconds.
    init(port: Int, readTimeout: Int = 30) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw CommandError(command: ["socket"], status: errno, output: String(cString: strerror(errno))) }
        var timeout = timeval(tv_sec: readTimeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(descriptor)
            throw CommandError(command: ["connect"], status: code, output: String(cString: strerror(code)))
        }
    }

    /// Sends `text` (all of it).
    func send(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw CommandError(command: ["send"], status: errno, output: String(cString: strerror(errno))) }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// What the server sends until it closes the connection: `closed` is false when the read
    /// timeout ran out first (the server kept the connection open).
    func readUntilClosed() -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count < 0 && errno == ECONNRESET { return (String(decoding: received, as: UTF8.self), true) }
            if count < 0 { return (String(decoding: received, as: UTF8.self), false) }
            if count == 0 { return (String(decoding: received, as: UTF8.self), true) }
            received += buffer[..<count]
        }
    }

    /// What the server sends until the end of an answer's header (a blank line), until it closes
    /// the connection, or until the read timeout: `closed` says whether the connection ended
    /// (closed or reset) before a whole header arrived.
    func readHead() -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1)
        while true {
            let count = recv(descriptor, &buffer, 1, 0)
            if count < 0 && errno == EINTR { continue }
            if count < 0 && errno == ECONNRESET { return (String(decoding: received, as: UTF8.self), true) }
            if count < 0 { return (String(decoding: received, as: UTF8.self), false) }
            if count == 0 { return (String(decoding: received, as: UTF8.self), true) }
            received.append(buffer[0])
            if received.count >= 4 && received.suffix(4) == [13, 10, 13, 10] { return (String(decoding: received, as: UTF8.self), false) }
        }
    }

    deinit { close(descriptor) }
}
