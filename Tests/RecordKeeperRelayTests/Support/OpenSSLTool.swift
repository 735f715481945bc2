import Foundation
import HarnessSupport
import TestHelpers

/// The `openssl` command (Debian package `openssl`), for keys and certificates tests make.
enum OpenSSLTool {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `openssl arguments` in `directory`; throws with its stderr when it fails.
    static func run(_ arguments: [String], in directory: URL) throws {
        let process = SpawnedProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = directory
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl \(arguments.joined(separator: " ")): \(String(decoding: message, as: UTF8.self))")
        }
    }

    /// A new P-256 key pair as PEM: (private, public).
    static func p256KeyPair(in directory: URL, name: String = "es256") throws -> (privateKey: String, publicKey: String) {
        try run(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "\(name).key"], in: directory)
        try run(["ec", "-in", "\(name).key", "-pubout", "-out", "\(name).pub"], in: directory)
        return (
            try String(contentsOf: directory.appendingPathComponent("\(name).key"), encoding: .utf8),
            try String(contentsOf: directory.appendingPathComponent("\(name).pub"), encoding: .utf8)
        )
    }

    /// A self-signed certificate for 127.0.0.1 and localhost with its key, as PEM files in
    /// `directory`: (certificate path, key path).
    static func selfSignedCertificate(in directory: URL) throws -> (certificate: URL, key: URL) {
        try run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "tls.key", "-out", "tls.crt", "-days", "1", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ], in: directory)
        return (directory.appendingPathComponent("tls.crt"), directory.appendingPathComponent("tls.key"))
    }
}
