import Foundation

/// The path of this running executable, to start it again as a worker (``runSelf(arguments:)``).
func executablePath() -> String {
    #if os(Linux)
    return (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    #else
    // Darwin has no /proc; Foundation asks dyld (_NSGetExecutablePath). Not compiled by this
    // project's CI (no Apple toolchain).
    return Bundle.main.executablePath ?? CommandLine.arguments[0]
    #endif
}
