// swift-tools-version: 6.2
// Q1/Q2 of RecordKeeper issue 23, GRDB.swift vs RecordKeeper side by side in one process: the
// query workloads of the GRDB harness (see README.md), kept outside the RecordKeeper package
// graph (the root Package.swift does not name this directory, and RecordKeeper keeps no
// outside dependency).
//
// Both dependencies are local checkouts named by environment variables, so that no path of
// any machine is written here:
//
//   RK_PATH=/path/to/RecordKeeper GRDB_PATH=/path/to/GRDB.swift swift build -c release
//
// A path dependency's package identity is the last component of its path, so the product
// references below derive it from the variables too.
import Foundation
import PackageDescription

func requiredPath(_ variable: String) -> String {
    guard let value = Context.environment[variable], !value.isEmpty else {
        fatalError("""
            \(variable) is not set. Build with:
              RK_PATH=<RecordKeeper checkout> GRDB_PATH=<GRDB.swift checkout> swift build -c release
            """)
    }
    return value
}

let rkPath = requiredPath("RK_PATH")
let grdbPath = requiredPath("GRDB_PATH")

func identity(of path: String) -> String {
    URL(fileURLWithPath: path).standardizedFileURL.lastPathComponent.lowercased()
}

let package = Package(
    name: "grdb-side-by-side",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .executable(name: "grdb-rk-queries", targets: ["grdb-rk-queries"]),
    ],
    dependencies: [
        .package(path: rkPath),
        .package(path: grdbPath),
    ],
    targets: [
        .executableTarget(
            name: "grdb-rk-queries",
            dependencies: [
                .product(name: "RecordKeeper", package: identity(of: rkPath)),
                .product(name: "GRDB", package: identity(of: grdbPath)),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
