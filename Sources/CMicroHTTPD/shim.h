#ifndef RECORDKEEPER_CMICROHTTPD_SHIM_H
#define RECORDKEEPER_CMICROHTTPD_SHIM_H

// GNU libmicrohttpd, the HTTP server under the sync relay (Debian: libmicrohttpd-dev;
// pkg-config: libmicrohttpd; Homebrew: libmicrohttpd). Server-side only: RecordKeeperRelay
// imports this module; the RecordKeeper library never links it, so it stays buildable for iOS.
// Linux and macOS only.
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

// Swift cannot call C variadic functions; these wrappers take fixed arguments.

/// MHD_start_daemon with every option in one MHD_OPTION_ARRAY (ended by MHD_OPTION_END).
static inline struct MHD_Daemon *recordkeeper_mhd_start_daemon(
    unsigned int flags, uint16_t port, MHD_AccessHandlerCallback handler, void *handler_cls,
    const struct MHD_OptionItem *options)
{
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// The port the daemon listens on (useful after binding port 0), or 0 if unknown.
static inline uint16_t recordkeeper_mhd_bound_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The daemon's MHD_FLAG values as it runs (which polling mode MHD_USE_AUTO chose).
static inline unsigned int recordkeeper_mhd_daemon_flags(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_FLAGS);
    return info == NULL ? 0 : (unsigned int) info->flags;
}

/// The socket of a connection, or -1.
static inline int recordkeeper_mhd_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int) info->connect_fd;
}

/// Option items whose value is a function pointer (Swift cannot cast one to intptr_t).
static inline struct MHD_OptionItem recordkeeper_mhd_notify_completed(
    MHD_RequestCompletedCallback callback, void *cls)
{
    struct MHD_OptionItem item = { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t) callback, cls };
    return item;
}

static inline struct MHD_OptionItem recordkeeper_mhd_notify_connection(
    MHD_NotifyConnectionCallback callback, void *cls)
{
    struct MHD_OptionItem item = { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t) callback, cls };
    return item;
}

typedef void *(*recordkeeper_mhd_uri_log_callback)(void *cls, const char *uri,
                                                    struct MHD_Connection *connection);

static inline struct MHD_OptionItem recordkeeper_mhd_uri_log(
    recordkeeper_mhd_uri_log_callback callback, void *cls)
{
    struct MHD_OptionItem item = { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t) callback, cls };
    return item;
}

static inline struct MHD_OptionItem recordkeeper_mhd_external_logger(
    MHD_LogCallback callback, void *cls)
{
    struct MHD_OptionItem item = { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t) callback, cls };
    return item;
}

#endif
