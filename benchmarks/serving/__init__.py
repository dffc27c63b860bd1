"""The collector over HTTP: server models beside a no-op app, load generators, slow clients,
where a served upload's CPU goes, decoding, and the shuffler's forwarding."""
