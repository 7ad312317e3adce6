// A plant controller's state, persisted every period; run it, stop it (even with kill -9),
// run it again: it goes on from the last period it persisted.
//   spmono bin/Release/Plant.exe [PERIODS]
using System;
using System.Threading;
using SPersistence;

namespace Plant
{
	[SPersistent]
	class Controller
	{
		[SPersistentField] public long Period;
		[SPersistentField] public double Setpoint = 20.0;
		[SPersistentField] public double Integral;
		public double LastReading;              // not persisted: read again after a restart

		public void Step (double reading)
		{
			LastReading = reading;
			Integral += Setpoint - reading;
			Period++;
		}
	}

	static class Program
	{
		static int Main (string [] args)
		{
			int periods = args.Length > 0 ? int.Parse (args [0]) : 10;
			Controller c;
			if (SPC.IsWarmRestart ()) {
				c = (Controller)SPC.RecvPData (1);
				Console.WriteLine ("warm restart: resuming after period {0}", c.Period);
			} else {
				c = new Controller ();
				SPC.AddRoot (c);
				Console.WriteLine ("cold start");
			}
			for (int i = 0; i < periods; i++) {
				c.Step (19.5 + (c.Period % 10) / 10.0);
				SPC.SendPData ();
				Thread.Sleep (10);
			}
			Console.WriteLine ("period {0} persisted, integral {1:F1}", c.Period, c.Integral);
			return 0;
		}
	}
}
